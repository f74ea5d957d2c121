"""URL routes of the reports area, included under /api/v1/."""
urlpatterns = []
