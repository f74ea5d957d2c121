"""Page routes of the moments area."""
urlpatterns = []
