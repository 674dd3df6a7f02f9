"""Helpers the tests share: model zoos, tiny ONNX graphs, textbook oracles, real Airflow and Celery
deployments. Imported as ``support.<module>`` (``tests/`` is on ``sys.path`` through its conftest)."""
