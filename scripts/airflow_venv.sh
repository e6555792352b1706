#!/usr/bin/env bash
# Creates .venv-airflow: Apache Airflow 3 with the Apache Spark provider and Watershed (editable),
# in a virtualenv of its own (Airflow pins its own dependencies; it never shares .venv).
# The DAG test (tests/dags) runs this; re-running is cheap: the install is skipped while
# pyproject.toml is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
venv=.venv-airflow
stamp="$venv/.watershed-installed"
if [ -f "$stamp" ] && [ ! pyproject.toml -nt "$stamp" ] && [ -x "$venv/bin/airflow" ]; then
    exit 0
fi
echo "installing Apache Airflow and Watershed into $venv (first run takes a few minutes)"
[ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -e '.[airflow,spark]'
# The Spark provider depends on pyspark-client, the Spark Connect client, which installs its own
# (older) copy of the pyspark package over pyspark's files: put pyspark's own files back so the
# Python side matches the JVM side spark-submit runs.
pyspark_version="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("pyspark"))')"
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "pyspark==$pyspark_version"
touch "$stamp"
