"""URL routes of the moments area, included under /api/v1/."""
urlpatterns = []
