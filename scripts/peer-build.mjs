// Builds one of the peer programs (../shared/peers, or NBC_PEERS) with Open MPI's mpicc into a
// temporary directory, for the bench scripts that run a peer side by side with nbcoll:
// { bin } when built, else { why } saying what is missing. `pkg` names a Debian package the
// program needs beyond Open MPI (checked with dpkg), `src` overrides the source path.
// NBC_PEER_BIN_DIR names a folder of peers built elsewhere (scripts/pack-bare-host.sh --peers,
// for a host without a compiler): a program found there is used as it is.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export function buildPeer(file, { flags = [], pkg = null, src = null } = {}) {
  const prebuilt = process.env.NBC_PEER_BIN_DIR;
  if (prebuilt !== undefined && prebuilt !== '') {
    const bin = join(prebuilt, basename(file, '.c'));
    return existsSync(bin) ? { bin } : { why: `${bin} not found (NBC_PEER_BIN_DIR)` };
  }
  const path = src ?? join(process.env.NBC_PEERS ?? `${ROOT}../shared/peers`, file);
  if (pkg !== null && spawnSync('dpkg', ['-s', pkg], { stdio: 'ignore' }).status !== 0) return { why: `${pkg} is not installed (apt-get install ${pkg})` };
  if (spawnSync('mpicc', ['--version'], { stdio: 'ignore' }).status !== 0) return { why: 'mpicc not found (apt-get install libopenmpi-dev openmpi-bin)' };
  const bin = join(mkdtempSync(join(tmpdir(), 'nbc-peer-')), basename(file, '.c'));
  const cc = spawnSync('mpicc', ['-O2', path, '-o', bin, ...flags], { encoding: 'utf8' });
  if (cc.status !== 0) return { why: `${path} did not build: ${(cc.stderr ?? '').trim().split('\n')[0]}` };
  return { bin };
}
