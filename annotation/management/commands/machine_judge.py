from django.core.management.base import BaseCommand, CommandError

from annotation.models import JudgeEndpoint
from annotation.services.machine_judges.runner.endpoints import JudgeEndpointError, judge_endpoint_create, \
    judge_endpoint_update


class Command(BaseCommand):
    help = ("Register, change, list or remove the machine judges the platform runs (OpenAI-compatible servers: "
            "vLLM, TGI, Ollama, a hosted API). The key is never given here: --key-env names the worker's "
            "environment variable REJUDGE_JUDGE_KEY_<NAME> holding it (or whose _FILE twin names a file).")

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        for action in ("add", "change"):
            p = sub.add_parser(action, help=f"{action} a judge")
            p.add_argument("name")
            p.add_argument("--url", dest="base_url", required=action == "add",
                           help="http(s)://host[:port] of the server (/v1/chat/completions is added).")
            p.add_argument("--model", required=action == "add", help="The model name the server serves.")
            p.add_argument("--prompt-version")
            p.add_argument("--frames", dest="frames_per_clip", type=int)
            p.add_argument("--concurrency", type=int)
            p.add_argument("--max-requests", type=int)
            p.add_argument("--max-tokens", type=int)
            p.add_argument("--temperature", type=float)
            p.add_argument("--timeout", dest="timeout_seconds", type=float)
            p.add_argument("--max-retries", type=int)
            p.add_argument("--key-env", help="REJUDGE_JUDGE_KEY_<NAME>: the variable that holds the key.")
        sub.add_parser("list", help="list the judges")
        p = sub.add_parser("remove", help="remove a judge (the verdicts it gave stay)")
        p.add_argument("name")

    def handle(self, *args, **opts):
        action = opts["action"]
        if action == "list":
            for e in JudgeEndpoint.objects.all():
                budget = ", ".join(x for x in (f"{e.max_requests} requests" if e.max_requests else "",
                                               f"{e.max_tokens} tokens" if e.max_tokens else "") if x) or "no budget"
                self.stdout.write(f"{e.name}\t{e.base_url}\t{e.model}\tprompt {e.prompt_version}\t{e.frames_per_clip} "
                                  f"frames\tconcurrency {e.concurrency}\t{budget}\tkey: {'yes' if e.key_env else 'none'}")
            return
        endpoint = JudgeEndpoint.objects.filter(name=opts["name"]).first()
        if action == "remove":
            if endpoint is None:
                raise CommandError(f"no judge '{opts['name']}'")
            endpoint.delete()
            self.stdout.write(self.style.SUCCESS(f"removed judge '{opts['name']}'"))
            return
        fields = ("base_url", "model", "prompt_version", "frames_per_clip", "concurrency", "max_requests", "max_tokens",
                  "temperature", "timeout_seconds", "max_retries", "key_env")
        values = {f: opts[f] for f in fields if opts.get(f) is not None}
        try:
            if action == "add":
                endpoint = judge_endpoint_create(name=opts["name"], **values)
            else:
                if endpoint is None:
                    raise CommandError(f"no judge '{opts['name']}'")
                endpoint = judge_endpoint_update(endpoint=endpoint, **values)
        except JudgeEndpointError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"judge '{endpoint.name}' (id {endpoint.pk}): {endpoint.model} at "
                                             f"{endpoint.base_url}"))
