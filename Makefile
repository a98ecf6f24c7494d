# Duet. `make help` lists the targets.
.DEFAULT_GOAL := help
GO ?= go

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/duet
	$(GO) build -o bin/duet ./cmd/duet

install: ## install duet where `go install` puts it, and say how to put that on PATH
	$(GO) install ./cmd/duet
	@dir=$$($(GO) env GOBIN); [ -n "$$dir" ] || dir=$$($(GO) env GOPATH)/bin; \
	echo "installed $$dir/duet"; \
	case ":$$PATH:" in *":$$dir:"*) ;; *) echo "$$dir is not on your PATH; add it: export PATH=\"\$$PATH:$$dir\" (put that line in ~/.profile to keep it)";; esac

test: ## run every test with the race detector (installs Chromium and the Node test packages if missing)
	./scripts/test.sh

lint: ## gofmt, go vet, staticcheck and tidy go.mod files
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) mod tidy -diff
	cd bench && $(GO) mod tidy -diff
	cd deploy && $(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	cd deploy && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

fuzz: ## run every fuzz target for FUZZTIME each (default 30s; FUZZ=regexp narrows)
	./scripts/fuzz.sh

conformance: ## the official MCP conformance suites (0.1.16; 0.2.0-alpha.12, both eras on one serve): server and client
	DUET_REQUIRE_NODE=1 $(GO) test -count=1 -run 'TestConformance' -v ./test/interop/ ./internal/cli/ | grep -E '^(=== RUN|--- |ok|FAIL)|conformance (server|client|20[0-9-]+ (server|client))'

demo: ## run the end-to-end demo
	./scripts/demo.sh

image: ## build the container image without a registry (debootstrap + buildah; as root): docs/deployment.md
	./scripts/image.sh

image-smoke: ## run the image: /readyz, migrations, a run claimed by a worker container (podman; PG=postgres://...)
	./scripts/image-smoke.sh

systemd-smoke: ## the systemd units under a real systemd (PID 1 of a container of the image): /readyz, a browser case
	./scripts/systemd-smoke.sh

bench: ## the load matrix, boundary, growth and goal tables from one run (bench/Makefile; CS=1,32,64 D=5s GROW=100000)
	$(MAKE) -C bench bench

.PHONY: help build install test lint fuzz demo conformance bench image image-smoke systemd-smoke
