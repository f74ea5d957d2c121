from .datasets import Caption, Clip, Dataset
from .jobs import Job
from .runs import Prediction, Run

__all__ = ["Caption", "Clip", "Dataset", "Job", "Prediction", "Run"]
