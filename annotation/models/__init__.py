from .datasets import Caption, Clip, Dataset
from .jobs import Job, JobAttempt
from .judgment_sets import ImportedJudgment, JudgmentSet
from .labels import Label, LabelChange, Lease
from .pools import PairProvenance, Pool, PooledPair, PoolMembership, PoolRun, RaterInvitation, RaterProfile
from .reports import Artefact, Report
from .runs import Prediction, Run
from .ranking import *  # noqa: F401,F403  (each area module lists its models in __all__)
from .moments import *  # noqa: F401,F403
from .crowd import *  # noqa: F401,F403
from .judging import *  # noqa: F401,F403
from .judges import *  # noqa: F401,F403
from .releases import *  # noqa: F401,F403
from .media import *  # noqa: F401,F403
