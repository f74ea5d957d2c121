"""Page routes of the rater area."""
urlpatterns = []
