# pppfwd — see README.md. `make demo` runs the main job, `make test` runs
# every test, lint and cross-build (what CI runs).
GO        ?= go
GOBIN     := $(shell $(GO) env GOPATH)/bin
PKGS      := ./...
# Integration tests need root (namespaces, veth, XDP, qemu); they skip with
# the reason otherwise.
TESTFLAGS ?= -count=1 -timeout 25m

.PHONY: all build deps lint test unit race fuzz-smoke bench-smoke demo clean

all: build

build:
	$(GO) build $(PKGS)
	$(GO) build -o bin/pppfwd ./cmd/pppfwd

deps:
	bash scripts/deps.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GOBIN)/staticcheck $(PKGS)
	GOOS=freebsd GOARCH=amd64 $(GO) build $(PKGS)
	GOOS=freebsd GOARCH=amd64 $(GO) vet $(PKGS)

unit:
	$(GO) test $(TESTFLAGS) $(PKGS)

# The race detector over the packages with concurrency of their own, and
# the namespace lab's router on real threads (skips when not root). The
# lab's fault tests time a loaded router (LCP echo deadlines, echoes
# after a flap); they run in `unit`, where the race detector's slowdown
# does not distort them.
race:
	$(GO) test -race -count=1 ./dataplane/... ./pppoe/... ./shaper/... ./nic/memport/...
	$(GO) test -race -count=1 -run 'TestIntegrationLab|TestIntegrationIngress' ./bench/lab

# Every fuzz target for a few seconds (their seed corpora already run in
# `unit`); FUZZTIME=1m for a longer look.
FUZZTIME ?= 4s
fuzz-smoke:
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash scripts/fuzz-smoke.sh

# Every Go benchmark once, so none rots.
bench-smoke:
	$(GO) test -count=1 -run '^$$' -bench . -benchtime=1x $(PKGS)

test: deps lint unit race fuzz-smoke bench-smoke

# The main job: pppfwd in the namespace lab (a LAN host reaching the
# "Internet" through pppfwd's PPPoE session, NAT and workers; needs root),
# then the whole-pipeline benchmark on one and two workers.
demo: build
	@if [ "$$(id -u)" = 0 ]; then ./bin/pppfwd lab --workers 2; \
	else echo "demo: not root, skipping the namespace lab (pppfwd lab)"; fi
	./bin/pppfwd bench pipeline --workers 1 --flows 10000 --size 64 --duration 5s
	./bin/pppfwd bench pipeline --workers 2 --flows 10000 --size 64 --duration 5s

clean:
	rm -rf bin
