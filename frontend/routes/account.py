"""Page routes of the signed-in user's own account."""
from django.urls import path

from frontend.views import account, invitations

urlpatterns = [
    path("account/token/", account.api_token, name="account-token"),
    path("invite/<str:token>/", invitations.invitation, name="invitation"),
]
