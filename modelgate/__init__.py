"""modelgate: evaluation, fairness, explanation and drift gates for ML models."""
__version__ = "0.1.0"
