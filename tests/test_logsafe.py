"""Log records of ``modelgate.*`` loggers get control characters escaped; other records,
including ones whose logger name is None, pass through untouched."""

from __future__ import annotations

import logging

from modelgate import logsafe


def test_modelgate_records_are_escaped_and_a_nameless_record_passes() -> None:
    logsafe.install()
    factory = logging.getLogRecordFactory()
    mine = factory("modelgate.cli", logging.INFO, __file__, 1, "got %s\nforged line", ("a\rb",),
                   None)
    assert "\n" not in mine.getMessage() and "\r" not in mine.getMessage()
    theirs = factory("urllib3", logging.INFO, __file__, 1, "x\ny", (), None)
    assert theirs.getMessage() == "x\ny"
    nameless = factory(None, logging.INFO, __file__, 1, "from structlog\n", (), None)
    assert nameless.name is None and nameless.getMessage() == "from structlog\n"
