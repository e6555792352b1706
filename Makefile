.PHONY: demo test lint bench-lineage bench-accuracy bench-api bench-scale clean

VENV := .venv/bin

demo:
	@scripts/bootstrap.sh
	$(VENV)/watershed demo

test:
	@scripts/bootstrap.sh
	$(VENV)/ruff check .
	$(VENV)/python -m pytest

lint:
	@scripts/bootstrap.sh
	$(VENV)/ruff check .
	$(VENV)/ruff format --check .

bench-lineage:
	@scripts/bootstrap.sh
	$(VENV)/python bench/lineage_bench.py
	$(VENV)/python bench/lineage_bench.py --corpus tpcds

bench-accuracy:
	@scripts/bootstrap.sh
	$(VENV)/python bench/lineage_accuracy.py

bench-api:
	@scripts/bootstrap.sh
	$(VENV)/python bench/api_bench.py

bench-scale:
	@scripts/bootstrap.sh
	$(VENV)/python bench/scale_bench.py

clean:
	rm -rf .venv .venv-airflow var .pytest_cache
