"""URL routes of the queue area, included under /api/v1/."""
urlpatterns = []
