from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from annotation import roles
from annotation.models import Dataset, Job


@login_required
def home(request):
    """The landing page: admins see datasets and jobs; raters and researchers their entry points."""
    context = {"role": roles.role_of(request.user)}
    if roles.is_admin(request.user) or roles.is_researcher(request.user):
        context["datasets"] = Dataset.objects.order_by("name")
    if roles.is_admin(request.user):
        context["jobs"] = Job.objects.all()[:10]
    return render(request, "frontend/home.html", context)
