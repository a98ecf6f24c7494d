# Duet. The test command is scripts/test.sh (CI runs it through .ci/run).
.PHONY: help test bench
help:
	@echo "make test    vet and every test with the race detector (scripts/test.sh)"
	@echo "make bench   load and boundary benchmarks, printed as ratio tables (bench/Makefile)"

test:
	scripts/test.sh

bench:
	$(MAKE) -C bench bench
