"""Page routes of the admin area."""
urlpatterns = []
