#!/usr/bin/env bash
# npm run bench:sim: the simulator's evidence (docs/sim.md).
#  1. calibrate LogGOPS on this machine (nbc calibrate --loggp);
#  2. validation: every collective's algorithms at 2..16 ranks over 1..4 emulated nodes,
#     simulated with those parameters vs nbc bench measured in the same run, twice (before
#     and after the simulation); median absolute error per algorithm and overall, beside the
#     median difference between the two measurements (validation.json, validation.md);
#  3. at scale: latency vs ranks (16 .. 100000) for every allreduce algorithm, and the
#     crossovers (scale.json, scale-*.svg);
#  4. the seeds at their scale with their presets (seeds.json).
# Warm-up: each size is a fresh job, and on the 2-core VM a job takes ~2000 calls (about 0.2 s
# of steady traffic) to settle: the median of blocks of 250 allreduces on 2 nodes fell from
# 30-48 us to 16-18 us over the first 3000 calls. nbc bench's default warm-up (500 calls on the
# first size) measures that ramp, while the calibration's 8 s of rounds is at steady state, so
# the validation warms up with 2000 calls, and (nbc bench's --warmup-time default) for at least
# 0.5 s: on one node 2000 calls pass in ~20 ms, before the JIT has settled (an 8 B allreduce on
# 2 ranks of one node measured 2.8-4.7 us after 2000 calls, 1.2-1.7 us after 0.5 s).
# QUICK=1 runs a tiny configuration (a few minutes); MEDIUM=1 every collective on 2 layouts. OUT=dir (default bench/results/sim).
# COLLS="..." and CONFIGS="ranks:ppn ..." replace the mode's collectives and layouts (a full run in parts).
# VALIDATION_ONLY=1 stops after step 2 (a part of a full run: steps 3 and 4 do not depend on it).
# RESIM=1 measures nothing: after a change to the model, it fits OUT's calibrations again from
# the samples they keep (nbc calibrate --loggp --refit) and simulates OUT's measured points again,
# each with the calibration it was simulated with (val/cal-TAG.txt; loggp.json where absent).
# Calibrating again: this VM's shared memory switches between states that differ 2x (a
# calibration at 19:52 measured a 64 KiB ping-pong in 1.66 us one way, one at 20:11 in 5.18, and
# an allreduce of 16 KiB on 2 ranks took 6.3 us at 19:47 and 12.7 us at 19:58, while one core's
# copy and reduction speeds stayed the same), so a validation group is simulated with a
# calibration measured at most CAL_EVERY seconds (default 480) before it: step 2 calibrates
# again into loggp-N.json once that much time has passed.
# Full run: about 3.3 hours on the 2-core reference VM (296 groups of points, each measured
# twice, 1.5 groups a minute on 2026-11-24), almost all of it in step 2's nbc bench, so it is
# best run in parts (COLLS=...); MEDIUM=1 took 22.5 min.
set -euo pipefail
cd "$(dirname "$0")/.."
NBC="node dist/cli/nbc.js"
OUT=${OUT:-bench/results/sim}
mkdir -p "$OUT/val" "$OUT/scale" "$OUT/seeds"

ALL_COLLS="barrier bcast reduce allreduce gather scatter allgather alltoall reduceScatterBlock scan exscan gatherv scatterv allgatherv alltoallv reduceScatter"
if [[ "${MEDIUM:-0}" == 1 ]]; then
  # Every collective's algorithms on two layouts, two sizes: about 15 min.
  COLLS=${COLLS:-$ALL_COLLS}
  CONFIGS=${CONFIGS:-"2:1 4:2"}
  SIZES="8,16K"
  ITERS=100
  WARMUP=2000
  SCALE_RANKS="16 256 1024"
  SCALE_SIZES="8,64K"
  SEED_PROCS="64"
elif [[ "${QUICK:-0}" == 1 ]]; then
  COLLS=${COLLS:-"allreduce bcast"}
  CONFIGS=${CONFIGS:-"2:1 4:2"}
  SIZES="8,4K"
  ITERS=100
  WARMUP=2000
  SCALE_RANKS="16 256 1024"
  SCALE_SIZES="8,64K"
  SEED_PROCS="64"
else
  COLLS=${COLLS:-$ALL_COLLS}
  # ranks:ppn, 1..4 emulated nodes
  CONFIGS=${CONFIGS:-"2:2 2:1 4:4 4:2 4:1 8:4 8:2 16:4"}
  SIZES="8,1K,16K,64K"
  ITERS=200
  WARMUP=2000
  SCALE_RANKS="16 64 256 1024 4096 16384 65536 100000"
  SCALE_SIZES="8,1K,64K,1M"
  SEED_PROCS="64 128 256 512"
fi

echo "== 1. calibration"
if [[ "${RESIM:-0}" == 1 ]]; then
  for f in "$OUT"/loggp.json "$OUT"/loggp-*.json; do
    [[ -f $f ]] && $NBC calibrate --loggp --refit "$f"
  done
else
  $NBC calibrate --loggp --out "$OUT/loggp.json"
fi
CAL=loggp.json # the calibration the next group is simulated with
CAL_EVERY=${CAL_EVERY:-480}
cal_at=$SECONDS
cal_n=1
recalibrate_if_due() {
  if (( SECONDS - cal_at >= CAL_EVERY )); then
    cal_n=$((cal_n + 1)); CAL=loggp-$cal_n.json
    echo "  (calibrating again: $CAL)"
    $NBC calibrate --loggp --out "$OUT/$CAL" > /dev/null 2> "$OUT/$CAL.log"
    cal_at=$SECONDS
  fi
}

simulate() { # coll ranks ppn alg sizes tag: the simulated twin of a validation point, with calibration $CAL
  echo "$CAL" > "$OUT/val/cal-$6.txt"
  $NBC sim "$1" --ranks "$2" --ppn "$3" --algorithm "$4" --sizes "$5" --params "$OUT/$CAL" --after-barrier --host-cores "$(nproc)" \
    --json "$OUT/val/sim-$6.json" > /dev/null 2>> "$OUT/val/bench-$6.err"
}

. scripts/host-algorithms.sh

echo "== 2. validation: nbc bench vs nbc sim (same run, parameters from step 1)"
if [[ "${RESIM:-0}" == 1 ]]; then
  for f in "$OUT"/val/bench-*.json; do
    tag=$(basename "$f" .json); tag=${tag#bench-}
    read -r coll ranks ppn alg sizes < <(node -e "const r = JSON.parse(require('fs').readFileSync('$f', 'utf8'));
      console.log(r.op, r.ranks, r.ppn, r.algorithm, r.results.map((x) => x.bytes).join(','))")
    [[ $coll == barrier ]] && sizes=8
    CAL=$(cat "$OUT/val/cal-$tag.txt" 2> /dev/null || echo loggp.json)
    simulate "$coll" "$ranks" "$ppn" "$alg" "$sizes" "$tag"
  done
  COLLS=""
fi
for coll in $COLLS; do
  for cfg in $CONFIGS; do
    ranks=${cfg%:*}; ppn=${cfg#*:}; nodes=$(( (ranks + ppn - 1) / ppn ))
    for alg in $(host_algorithms "$coll" "$nodes"); do
      recalibrate_if_due
      tag="$coll-$ranks-$ppn-$alg"
      if $NBC bench "$coll" --ranks "$ranks" --ppn "$ppn" --algorithm "$alg" --sizes "$SIZES" --iters "$ITERS" --warmup "$WARMUP" --plain \
          --json "$OUT/val/bench-$tag.json" > /dev/null 2> "$OUT/val/bench-$tag.err"; then
        simulate "$coll" "$ranks" "$ppn" "$alg" "$SIZES" "$tag"
        # The same measurement again: how far nbc bench is from itself is the floor under the error.
        $NBC bench "$coll" --ranks "$ranks" --ppn "$ppn" --algorithm "$alg" --sizes "$SIZES" --iters "$ITERS" --warmup "$WARMUP" --plain \
          --json "$OUT/val/repeat-$tag.json" > /dev/null 2>> "$OUT/val/bench-$tag.err" || true
        echo "  $tag"
      else
        echo "  $tag: nbc bench failed (see $OUT/val/bench-$tag.err)"
      fi
    done
  done
done
node scripts/sim-summary.mjs validation "$OUT"
if [[ "${VALIDATION_ONLY:-0}" == 1 ]]; then echo "results in $OUT (validation only)"; exit 0; fi

echo "== 3. at scale: allreduce latency vs ranks"
for alg in recursive-doubling knomial rabenseifner ring; do
  for n in $SCALE_RANKS; do
    # The ring's schedules hold 2(p-1) steps per rank: p^2 actions in all; beyond 1024 ranks
    # they do not fit in memory (docs/sim.md, limits).
    if [[ $alg == ring && $n -gt 1024 ]]; then continue; fi
    $NBC sim allreduce --ranks "$n" --algorithm "$alg" --sizes "$SCALE_SIZES" --params "$OUT/loggp.json" \
      --json "$OUT/scale/$alg-$n.json" > /dev/null 2>&1
    echo "  $alg $n"
  done
done
for n in $SCALE_RANKS; do
  $NBC sim allreduce --ranks "$n" --sizes "$SCALE_SIZES" --params "$OUT/loggp.json" --json "$OUT/scale/auto-$n.json" > /dev/null 2>&1
done
node scripts/sim-summary.mjs scale "$OUT"

echo "== 4. the seeds at their scale, with their presets"
# seed 003: agg vs host allreduce on 128 hosts, 8 B .. 4 KiB (paper, Table V: 2.1x .. 3.2x)
for ex in agg host; do
  $NBC sim allreduce --ranks 128 --ppn 1 --executor $ex --sizes 8:4K:2 --params switchib2 --json "$OUT/seeds/003-$ex.json" > /dev/null
done
# seed 000: offloaded flat and two-level iallreduce, 8 processes per node, dedicated engine (overlap >= 90 % from 1 KiB)
for n in $SEED_PROCS; do
  $NBC sim iallreduce --ranks "$n" --ppn 8 --executor offload --algorithm two-level --compute --sizes 8,1K,16K,64K --params qdr-cx2 --json "$OUT/seeds/000-two-level-$n.json" > /dev/null
  $NBC sim iallreduce --ranks "$n" --ppn 8 --executor offload --algorithm knomial --compute --sizes 8,1K,16K,64K --params qdr-cx2 --json "$OUT/seeds/000-flat-$n.json" > /dev/null
  $NBC sim iallreduce --ranks "$n" --ppn 8 --executor host --algorithm recursive-doubling --compute --sizes 8,1K,16K,64K --params qdr-cx2 --json "$OUT/seeds/000-host-$n.json" > /dev/null
done
# seed 004: hierarchy on 4 nodes x 8 cores (barrier and allreduce ~3x)
for coll in barrier allreduce; do
  flat=$([[ $coll == barrier ]] && echo dissemination || echo recursive-doubling)
  $NBC sim $coll --ranks 32 --ppn 8 --algorithm hier --sizes 8,64,512 --params clovertown-ddr --json "$OUT/seeds/004-$coll-hier.json" > /dev/null
  $NBC sim $coll --ranks 32 --ppn 8 --algorithm $flat --sizes 8,64,512 --params clovertown-ddr --json "$OUT/seeds/004-$coll-flat.json" > /dev/null
done
node scripts/sim-summary.mjs seeds "$OUT"
echo "results in $OUT"
