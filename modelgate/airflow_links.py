"""The "Report" extra link shown on the ``report`` task of both DAGs in the Airflow UI.

Airflow 3 calls ``get_link`` on the worker when the task ends and stores the result as the
XCom ``_link_ReportLink``; the UI reads that XCom (no plugin needed). The report task pushes
its link as the XCom ``report_url``. Object-store links are presigned and expire; a local
store gives ``file://`` links. Only ``airflow.sdk`` is imported here: DAG files import this
module at parse time.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink

REPORT_URL_XCOM = "report_url"


class ReportLink(BaseOperatorLink):
    name = "Report"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        from airflow.sdk.execution_time.xcom import XCom

        return str(XCom.get_value(ti_key=ti_key, key=REPORT_URL_XCOM) or "")
