#!/usr/bin/env bash
# interleaved A/B of V8's --interrupt-budget on a fresh job's first calls and a cold PCG solve
cd /work/main
out=/tmp/ib; mkdir -p $out
for r in 1 2 3; do
  for side in base ib16k ib4k; do
    case $side in base) a="";; ib16k) a="--interrupt-budget=16384";; ib4k) a="--interrupt-budget=4096";; esac
    NBC_NODE_ARGS="$a" node dist/cli/nbc.js run -n 4 --ppn 4 scripts/first-calls-job.mjs $out/loop-$side-$r.json 8000 100 >/dev/null 2>&1
    NBC_NODE_ARGS="$a" node dist/cli/nbc.js pcg --ranks 4 --n 16 --variant alg2 --verify off --quiet --json $out/pcg4-$side-$r.json 2>/dev/null
    NBC_NODE_ARGS="$a" node dist/cli/nbc.js pcg --ranks 2 --n 24 --variant alg2 --verify off --quiet --json $out/pcg2-$side-$r.json 2>/dev/null
    NBC_NODE_ARGS="$a" node dist/cli/nbc.js pcg --ranks 4 --n 16 --variant alg2 --warmup 5 --verify off --quiet --json $out/pcgw-$side-$r.json 2>/dev/null
  done
done
node -e '
const fs=require("fs"); const med=x=>[...x].sort((a,b)=>a-b)[x.length>>1];
for (const side of ["base","ib16k","ib4k"]) {
  const loops=[1,2,3].map(r=>JSON.parse(fs.readFileSync(`/tmp/ib/loop-${side}-${r}.json`)).medians);
  const seg=(a,b)=>med(loops.map(m=>med(m.slice(a,b))));
  const pcg=(k)=>[1,2,3].map(r=>JSON.parse(fs.readFileSync(`/tmp/ib/${k}-${side}-${r}.json`)).perIterationMs.toFixed(3)).join(" ");
  console.log(side.padEnd(6), "calls 1-100", seg(0,1).toFixed(1), "101-1000", seg(1,10).toFixed(1), "1001-2000", seg(10,20).toFixed(1), "3001-4000", seg(30,40).toFixed(1), "7001-8000", seg(70,80).toFixed(1), "| pcg 4x16 cold", pcg("pcg4"), "| 2x24 cold", pcg("pcg2"), "| 4x16 warm", pcg("pcgw"));
}'
