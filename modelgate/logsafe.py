"""Log lines that cannot be forged or leak secrets.

Names (model names, versions, dataset paths, group labels) come from users; a newline or an
escape sequence in one must not start a fake log line or repaint a terminal. Every record of
a ``modelgate.*`` logger gets its string arguments escaped by :func:`install` (a log-record
factory: logger filters do not reach child loggers and Airflow owns the task-log handlers, so
escaping where records are made is the one place that covers the CLI and Airflow alike).
Credentials are redacted by :func:`redact_secrets`; presigned links lose their query string
(which carries the access key id and signature) through :func:`link_for_log`.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from modelgate.display_text import escape_hidden, has_hidden_characters


def has_control_characters(text: str) -> bool:
    """Whether ``text`` holds a character :func:`escape_for_log` would escape: a control,
    bidirectional or zero-width character (:mod:`modelgate.display_text`).

    >>> has_control_characters("age\x1b[2J"), has_control_characters("age band")
    (True, False)
    """
    return has_hidden_characters(text)


def escape_for_log(text: str) -> str:
    """Replace control, bidirectional and zero-width characters with visible escapes
    (``\\n``, ``\\x1b``, ``\\u202e``): :func:`modelgate.display_text.escape_hidden`.

    >>> escape_for_log("toy\\nINFO forged line\\x1b[2J")
    'toy\\\\nINFO forged line\\\\x1b[2J'
    >>> escape_for_log("plain name")
    'plain name'
    """
    return escape_hidden(text)


def one_line(text: str) -> str:
    """``text`` as one log/DB line: control characters escaped (failure reasons, summaries)."""
    return escape_for_log(text)


_URL_PASSWORD = re.compile(r"(://[^:/@\s]+):[^@\s]*@")
_PASSWORD_PARAM = re.compile(r"([?&;]password=)[^&#\s]*", re.IGNORECASE)
_KEYWORD_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&;#]+)", re.IGNORECASE)


def redact_secrets(text: str) -> str:
    """Hide passwords in every DSN form: URL userinfo, ``?password=`` and ``password=...``.

    >>> redact_secrets("postgresql://writer:s3cret@db:5432/modelgate")
    'postgresql://writer:***@db:5432/modelgate'
    >>> redact_secrets("postgresql://db/modelgate?user=w&password=s3cret&sslmode=require")
    'postgresql://db/modelgate?user=w&password=***&sslmode=require'
    >>> redact_secrets("host=db user=w password='s3 cret' dbname=modelgate")
    'host=db user=w password=*** dbname=modelgate'
    """
    text = _URL_PASSWORD.sub(r"\1:***@", text)
    text = _PASSWORD_PARAM.sub(r"\1***", text)  # before the keyword form, which it contains
    return _KEYWORD_PASSWORD.sub(r"\1***", text)


def link_for_log(link: str) -> str:
    """A link without its query string: presigned S3 links carry the access key id there.

    >>> link_for_log("http://minio:9000/b/reports/x.html?X-Amz-Credential=AKIA%2F&X-Amz-Signature=ab")
    'http://minio:9000/b/reports/x.html'
    """
    return link.split("?", 1)[0]


def _escaped(value: Any) -> Any:
    return escape_for_log(value) if isinstance(value, str) else value


_installed = False


def install() -> None:
    """Escape control characters in the string arguments of every ``modelgate.*`` record.

    Idempotent. Records of other loggers are left alone.
    """
    global _installed
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        # some libraries (structlog's stdlib bridge) make records whose name is None
        if not isinstance(record.name, str) or not record.name.startswith("modelgate"):
            return record
        if isinstance(record.msg, str):
            record.msg = escape_for_log(record.msg)
        if record.args:
            if isinstance(record.args, dict):
                record.args = {k: _escaped(v) for k, v in record.args.items()}
            else:
                record.args = tuple(_escaped(v) for v in record.args)
        return record

    logging.setLogRecordFactory(factory)
    _installed = True
