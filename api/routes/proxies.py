"""URL routes of the proxies area, included under /api/v1/."""
urlpatterns = []
