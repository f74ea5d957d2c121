"""Page routes of the proxies area."""
urlpatterns = []
