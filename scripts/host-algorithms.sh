# Sourced by the bench scripts that force every algorithm (bench-sim.sh, bench-switch.sh):
# host_algorithms COLL NODES prints the algorithms a call of COLL can name on the host executor
# (ALGORITHMS in dist/coll/select.js; hier only where the layout spans NODES > 1 nodes).
host_algorithms() {
  node --input-type=module -e "
    const { ALGORITHMS } = await import('./dist/coll/select.js');
    const a = Object.entries(ALGORITHMS['$1']).filter(([n, x]) => x.executors === undefined && (n !== 'hier' || $2 > 1)).map(([n]) => n);
    console.log(a.join(' '));"
}
