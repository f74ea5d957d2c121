"""manage.py check_media and prepare_media, and the check import_dataset runs after an import."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Clip, ClipMediaCheck
from tests.annotation.services.media.media_world import lab_dataset, manifest, media_files

pytestmark = pytest.mark.django_db


def test_check_media_prints_each_problem_with_its_fix_and_fails_while_clips_fail(tmp_path, capsys):
    dataset = lab_dataset(tmp_path)
    with pytest.raises(CommandError, match="6 clips failed the media check"):
        call_command("check_media", "--dataset", "lab")
    out = capsys.readouterr().out
    assert "media check: 2 of 8 clips play in browsers; 6 failed (4 fixed by prepare_media)" in out
    assert "  msvd_avi: container browsers do not play: avi -> prepare_media converts it" in out
    assert "  missing: file missing: no file lab/nowhere.mp4" in out
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        call_command("check_media", "--dataset", "nope")
    call_command("prepare_media", "--dataset", str(dataset.pk), "--height", "64")
    out = capsys.readouterr().out
    assert out.startswith("prepared 4 clips (4 copies); 0 were prepared before; 2 have problems a copy does not fix")
    assert Clip.objects.filter(dataset=dataset).exclude(original_media="").count() == 4
    call_command("prepare_media", "--dataset", "lab")
    assert capsys.readouterr().out.startswith("prepared 0 clips (0 copies); 4 were prepared before")
    with pytest.raises(CommandError, match="height"):
        call_command("prepare_media", "--dataset", "lab", "--height", "10")


def test_import_dataset_checks_the_media_after_the_import(tmp_path, capsys):
    media_files()
    call_command("import_dataset", str(manifest(tmp_path)), "--name", "from-cli")
    out = capsys.readouterr().out
    assert "media check: 2 of 8 clips play in browsers; 6 failed" in out
    assert ClipMediaCheck.objects.filter(clip__dataset__name="from-cli").count() == 8
    call_command("import_dataset", str(manifest(tmp_path)), "--name", "unchecked", "--no-media-check")
    assert not ClipMediaCheck.objects.filter(clip__dataset__name="unchecked").exists()
