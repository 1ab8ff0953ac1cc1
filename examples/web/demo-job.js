// The demo page's job (served by `npx nbc web`): every rank is a Web Worker of the page.
// 1. allreduce latency and bandwidth, 8 B to 4 MiB, timed on rank 0;
// 2. conjugate gradients on the 3D Poisson problem (7-point Laplacian, N^3 points split in
//    slabs along z), the halo exchange overlapped with the interior's matrix-vector product.
// Rank 0 logs one JSON line per point; the page charts them as they come.
import { IN_PLACE } from '/nbcoll-rank.js';

export default function demo(world) {
  const emit = (o) => { if (world.rank === 0) console.log(JSON.stringify(o)); };

  // ---- 1. allreduce --------------------------------------------------------------------------
  for (let bytes = 8; bytes <= 4 << 20; bytes *= 4) {
    const x = new Float64Array(bytes / 8).fill(1);
    const y = new Float64Array(bytes / 8);
    const iters = bytes <= 65536 ? 300 : 20;
    for (let i = 0; i < 10; i++) world.allreduce(x, y, 'sum');
    world.barrier();
    const t0 = performance.now();
    for (let i = 0; i < iters; i++) world.allreduce(x, y, 'sum');
    const us = ((performance.now() - t0) * 1000) / iters;
    if (y[0] !== world.size) throw new Error(`allreduce of ones gave ${y[0]}, expected ${world.size}`);
    emit({ kind: 'allreduce', bytes, us, gbs: bytes / us / 1000 });
  }

  // ---- 2. CG on -lap(u) = f, u = 0 on the boundary ----------------------------------------
  const N = 48;
  const p = world.size;
  const r = world.rank;
  const z0 = Math.floor((r * N) / p);
  const nz = Math.floor(((r + 1) * N) / p) - z0;
  const plane = N * N;
  const len = (nz + 2) * plane; // a ghost plane below and above
  const x = new Float64Array(len);
  const res = new Float64Array(len);
  const dir = new Float64Array(len);
  const q = new Float64Array(len);
  // f = 1 everywhere: the residual starts at b.
  for (let i = plane; i < (nz + 1) * plane; i++) res[i] = 1;
  dir.set(res);
  const dot = (a, b) => {
    let s = 0;
    for (let i = plane; i < (nz + 1) * plane; i++) s += a[i] * b[i];
    const t = Float64Array.of(s);
    world.allreduce(IN_PLACE, t, 'sum');
    return t[0];
  };
  const rowOf = (k, j, i) => k * plane + j * N + i;
  const stencil = (v, out, k) => { // plane k (1..nz) of out = A v
    for (let j = 0; j < N; j++) {
      for (let i = 0; i < N; i++) {
        const c = rowOf(k, j, i);
        let s = 6 * v[c] - v[c - plane] - v[c + plane];
        if (i > 0) s -= v[c - 1];
        if (i < N - 1) s -= v[c + 1];
        if (j > 0) s -= v[c - N];
        if (j < N - 1) s -= v[c + N];
        out[c] = s;
      }
    }
  };
  let rho = dot(res, res);
  const rho0 = rho;
  const t0 = performance.now();
  let it = 0;
  for (; it < 500 && rho > 1e-20 * rho0; it++) {
    // Halo: send the edge planes, receive the ghosts; the interior planes meanwhile.
    const reqs = [];
    if (r > 0) {
      reqs.push(world.irecv(dir.subarray(0, plane), r - 1, 1));
      reqs.push(world.isend(dir.subarray(plane, 2 * plane), r - 1, 2));
    }
    if (r < p - 1) {
      reqs.push(world.irecv(dir.subarray((nz + 1) * plane, (nz + 2) * plane), r + 1, 2));
      reqs.push(world.isend(dir.subarray(nz * plane, (nz + 1) * plane), r + 1, 1));
    }
    for (let k = 2; k < nz; k++) stencil(dir, q, k);
    for (const req of reqs) req.wait();
    stencil(dir, q, 1);
    if (nz > 1) stencil(dir, q, nz);
    const alpha = rho / dot(dir, q);
    for (let i = plane; i < (nz + 1) * plane; i++) {
      x[i] += alpha * dir[i];
      res[i] -= alpha * q[i];
    }
    const next = dot(res, res);
    for (let i = plane; i < (nz + 1) * plane; i++) dir[i] = res[i] + (next / rho) * dir[i];
    rho = next;
    emit({ kind: 'cg', it: it + 1, residual: Math.sqrt(rho / rho0), ms: performance.now() - t0 });
  }
  emit({ kind: 'cg-done', iterations: it, ms: performance.now() - t0, n: N });
  return { iterations: it, residual: Math.sqrt(rho / rho0) };
}
