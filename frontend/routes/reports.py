"""Page routes of the reports area."""
urlpatterns = []
