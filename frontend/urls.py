from django.contrib.auth import views as auth_views
from django.urls import include, path

from frontend.views import media, pages

app_name = "frontend"

urlpatterns = [
    path("", pages.home, name="home"),
    path("login/", auth_views.LoginView.as_view(template_name="frontend/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("media/<path:path>", media.media_file, name="media"),
    path("", include("frontend.routes.rater")),
    path("", include("frontend.routes.admin")),
    path("", include("frontend.routes.reports")),
    path("", include("frontend.routes.proxies")),
    path("", include("frontend.routes.moments")),
    path("", include("frontend.routes.account")),
    path("", include("frontend.routes.researchers")),
    path("", include("frontend.routes.crowd")),
    path("", include("frontend.routes.releases")),
]
