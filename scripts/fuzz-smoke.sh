#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME (their seed corpora
# already run with the unit tests). A finding fails the run: Go writes the
# failing input under testdata/fuzz and prints it. A fuzzing run that ends
# badly without a finding (the engine's worker killed or starved on a busy
# machine) is retried once, then reported as a failure too.
set -uo pipefail
FUZZTIME=${FUZZTIME:-4s}
GO=${GO:-go}
status=0
for pkg in $($GO list ./...); do
	for fz in $($GO test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $fz"
		for try in 1 2; do
			out=$($GO test -run '^$' -fuzz "^${fz}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 1s "$pkg" 2>&1)
			rc=$?
			[ $rc = 0 ] && break
			if grep -q "Failing input written to" <<<"$out" || [ $try = 2 ]; then
				grep -v '^fuzz: elapsed' <<<"$out" | tail -40
				status=1
				break
			fi
			echo "  run ended without a finding; retrying. Its output:"
			grep -v '^fuzz: elapsed' <<<"$out" | tail -15 | sed 's/^/    /'
		done
	done
done
exit $status
