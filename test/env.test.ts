import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_MASTER_PORT,
  MASTER_PORT_SPAN,
  detectWireup,
  firstHostOfNodelist,
  fnv1a32,
  masterPortForJob,
  parseSize,
  parseSizeRange,
} from '../src/runtime/env.js';
import { ErrorCode } from '../src/errors.js';
import { hasCode } from './assert.ts';

const SECRET = 'a1'.repeat(32);


test('detectWireup() reads NBC_* variables, including address, port and secret', () => {
  const w = detectWireup({
    NBC_NODE_RANK: '2',
    NBC_NODES: '4',
    NBC_MASTER_ADDR: 'host0',
    NBC_MASTER_PORT: '12345',
    NBC_SECRET: SECRET,
    NBC_JOB_ID: 'abc',
  });
  assert.equal(w.source, 'nbc');
  assert.equal(w.nodeRank, 2);
  assert.equal(w.nodes, 4);
  assert.equal(w.masterAddr, 'host0');
  assert.equal(w.masterPort, 12345);
  assert.equal(w.jobId, 'abc');
  assert.ok(w.secret !== null);
  assert.equal(w.secret.length, 32);
  assert.equal(w.secret.toString('hex'), SECRET);
});

test('detectWireup() defaults to 127.0.0.1, port 29500 and a null secret when only the rank is given', () => {
  const w = detectWireup({ NBC_NODE_RANK: '0', NBC_NODES: '1' });
  assert.deepEqual(w, {
    nodeRank: 0,
    nodes: 1,
    masterAddr: '127.0.0.1',
    masterPort: 29500,
    secret: null,
    source: 'nbc',
    jobId: '',
  });
});

test('detectWireup() reads Open MPI variables and derives the port from the Open MPI job id', () => {
  const w = detectWireup({ OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '2', OMPI_MCA_ess_base_jobid: '3216310273' });
  assert.equal(w.source, 'ompi');
  assert.equal(w.nodeRank, 1);
  assert.equal(w.nodes, 2);
  assert.equal(w.masterAddr, '127.0.0.1');
  assert.equal(w.jobId, '3216310273');
  assert.equal(w.masterPort, masterPortForJob('3216310273'));
  assert.equal(
    detectWireup({ OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '2', OMPI_MCA_orte_ess_jobid: '77' }).jobId,
    '77',
  );
  assert.equal(
    detectWireup({ OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '2', PMIX_NAMESPACE: 'prterun-h-1@1' }).jobId,
    'prterun-h-1@1',
  );
});

test('detectWireup() reads PMI (Hydra) variables and its job id', () => {
  const w = detectWireup({ PMI_RANK: '3', PMI_SIZE: '8', PMI_JOBID: 'kvs_42_0' });
  assert.equal(w.source, 'pmi');
  assert.equal(w.nodeRank, 3);
  assert.equal(w.nodes, 8);
  assert.equal(w.jobId, 'kvs_42_0');
  assert.equal(detectWireup({ PMI_RANK: '0', PMI_SIZE: '2', I_MPI_HYDRA_UUID: 'u-1' }).jobId, 'u-1');
});

test('detectWireup() reads Slurm variables, the first host of the step nodelist and job.step as job id', () => {
  const w = detectWireup({
    SLURM_PROCID: '5',
    SLURM_NTASKS: '6',
    SLURM_JOB_ID: '1234',
    SLURM_STEP_ID: '0',
    SLURM_STEP_NODELIST: 'node[07-09,12]',
    SLURM_JOB_NODELIST: 'node[01-12]',
  });
  assert.equal(w.source, 'slurm');
  assert.equal(w.nodeRank, 5);
  assert.equal(w.nodes, 6);
  assert.equal(w.jobId, '1234.0');
  assert.equal(w.masterAddr, 'node07');
  assert.equal(w.masterPort, masterPortForJob('1234.0'));
  const jobList = detectWireup({ SLURM_PROCID: '0', SLURM_NTASKS: '2', SLURM_JOB_ID: '9', SLURM_JOB_NODELIST: 'cn5' });
  assert.equal(jobList.masterAddr, 'cn5');
  assert.equal(jobList.jobId, '9');
  const odd = detectWireup({ SLURM_PROCID: '0', SLURM_NTASKS: '2', SLURM_JOB_NODELIST: 'n[1-2' });
  assert.equal(odd.masterAddr, '127.0.0.1', 'an unparsable nodelist falls back to loopback');
  const explicit = detectWireup({ SLURM_PROCID: '0', SLURM_NTASKS: '2', SLURM_JOB_NODELIST: 'n1', NBC_MASTER_ADDR: 'head' });
  assert.equal(explicit.masterAddr, 'head', 'NBC_MASTER_ADDR wins over the nodelist');
});

test('detectWireup() prefers NBC over Open MPI over PMI over Slurm, for rank and for job id', () => {
  const all = {
    NBC_NODE_RANK: '0',
    NBC_NODES: '1',
    OMPI_COMM_WORLD_RANK: '1',
    OMPI_COMM_WORLD_SIZE: '2',
    PMI_RANK: '2',
    PMI_SIZE: '3',
    SLURM_PROCID: '3',
    SLURM_NTASKS: '4',
    NBC_JOB_ID: 'n',
    OMPI_MCA_ess_base_jobid: 'o',
    PMI_JOBID: 'p',
    SLURM_JOB_ID: 's',
  };
  const drop = (...names: string[]) =>
    Object.fromEntries(Object.entries(all).filter(([k]) => !names.includes(k)));
  assert.deepEqual(pick(detectWireup(all)), ['nbc', 0, 1, 'n']);
  assert.deepEqual(pick(detectWireup(drop('NBC_NODE_RANK', 'NBC_NODES', 'NBC_JOB_ID'))), ['ompi', 1, 2, 'o']);
  assert.deepEqual(
    pick(detectWireup(drop('NBC_NODE_RANK', 'NBC_NODES', 'NBC_JOB_ID', 'OMPI_COMM_WORLD_RANK', 'OMPI_COMM_WORLD_SIZE', 'OMPI_MCA_ess_base_jobid'))),
    ['pmi', 2, 3, 'p'],
  );
  assert.deepEqual(
    pick(detectWireup({ SLURM_PROCID: '3', SLURM_NTASKS: '4', SLURM_JOB_ID: 's' })),
    ['slurm', 3, 4, 's'],
  );
  // mpirun inside a Slurm allocation: Open MPI's numbering and job id, not the allocation's.
  assert.deepEqual(
    pick(detectWireup({ OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '2', OMPI_MCA_ess_base_jobid: 'o', SLURM_PROCID: '0', SLURM_NTASKS: '1', SLURM_JOB_ID: 's' })),
    ['ompi', 1, 2, 'o'],
  );
  function pick(w: ReturnType<typeof detectWireup>) {
    return [w.source, w.nodeRank, w.nodes, w.jobId];
  }
});

test('derived master ports are stable, in 29500..49499, and agree between nodes of one job', () => {
  // FNV-1a-32 reference values.
  assert.equal(fnv1a32(''), 0x811c9dc5);
  assert.equal(fnv1a32('a'), 0xe40c292c);
  assert.equal(fnv1a32('foobar'), 0xbf9cf968);
  assert.equal(masterPortForJob(''), DEFAULT_MASTER_PORT);
  assert.equal(masterPortForJob('foobar'), 29500 + (0xbf9cf968 % 20000));
  // 32-bit FNV-1a (Fowler, Noll, Vo), written out again for the check.
  const fnv1a = (text: string): number => {
    let h = 0x811c9dc5;
    for (const b of Buffer.from(text, 'utf8')) h = Math.imul(h ^ b, 0x01000193) >>> 0;
    return h;
  };
  assert.equal(fnv1a('foobar'), 0xbf9cf968);
  const seen = new Set<number>();
  for (let i = 0; i < 2000; i++) {
    const id = `${1000 + i}.0`;
    const p = masterPortForJob(id);
    assert.ok(Number.isInteger(p) && p >= 29500 && p < 29500 + MASTER_PORT_SPAN, `port ${p} for ${id}`);
    assert.equal(p, 29500 + (fnv1a(id) % 20000), `port for ${id}, by FNV-1a computed here`);
    seen.add(p);
  }
  assert.ok(seen.size > 1800, 'consecutive job ids spread over the range');
  const node0 = detectWireup({ SLURM_PROCID: '0', SLURM_NTASKS: '2', SLURM_JOB_ID: '77', SLURM_STEP_ID: '3' });
  const node1 = detectWireup({ SLURM_PROCID: '1', SLURM_NTASKS: '2', SLURM_JOB_ID: '77', SLURM_STEP_ID: '3' });
  assert.equal(node0.masterPort, node1.masterPort);
  const nextStep = detectWireup({ SLURM_PROCID: '0', SLURM_NTASKS: '2', SLURM_JOB_ID: '77', SLURM_STEP_ID: '4' });
  assert.notEqual(nextStep.masterPort, node0.masterPort, 'two steps of one allocation get different ports');
  // NBC_MASTER_PORT overrides the derivation.
  assert.equal(detectWireup({ NBC_NODE_RANK: '0', NBC_NODES: '1', NBC_JOB_ID: 'x', NBC_MASTER_PORT: '4000' }).masterPort, 4000);
});

test('firstHostOfNodelist() expands the first host of simple Slurm hostlists', () => {
  assert.equal(firstHostOfNodelist('node07'), 'node07');
  assert.equal(firstHostOfNodelist('node[01-04,07]'), 'node01');
  assert.equal(firstHostOfNodelist('node[7,1-4]'), 'node7');
  assert.equal(firstHostOfNodelist('gpu[003-004],cpu[1-9]'), 'gpu003');
  assert.equal(firstHostOfNodelist('a.example.org,b.example.org'), 'a.example.org');
  assert.equal(firstHostOfNodelist('rack[2-3]-n[05-06]'), 'rack2-n05');
  assert.equal(firstHostOfNodelist('node[01-04]x'), 'node01x');
  assert.equal(firstHostOfNodelist('node[a-b]'), null);
  assert.equal(firstHostOfNodelist('node[01'), null);
  assert.equal(firstHostOfNodelist('node[[1]]'), null);
  assert.equal(firstHostOfNodelist('bad host'), null);
});

test('detectWireup() rejects bad values with NbcLaunchError naming the variable and the value', () => {
  assert.throws(
    () => detectWireup({ NBC_NODE_RANK: '5', NBC_NODES: '4' }),
    hasCode(ErrorCode.LAUNCH, /NBC_NODE_RANK=5 is not below NBC_NODES=4/),
  );
  assert.throws(
    () => detectWireup({ OMPI_COMM_WORLD_RANK: '2', OMPI_COMM_WORLD_SIZE: '2' }),
    hasCode(ErrorCode.LAUNCH, /OMPI_COMM_WORLD_RANK=2 is not below OMPI_COMM_WORLD_SIZE=2/),
  );
  assert.throws(() => detectWireup({ NBC_NODE_RANK: '-1', NBC_NODES: '4' }), hasCode(ErrorCode.LAUNCH, /NBC_NODE_RANK=-1 is not a valid number/));
  assert.throws(() => detectWireup({ NBC_NODE_RANK: '0', NBC_NODES: '0' }), hasCode(ErrorCode.LAUNCH, /NBC_NODES=0 .*expected an integer >= 1/));
  assert.throws(() => detectWireup({ PMI_RANK: '1.5', PMI_SIZE: '4' }), hasCode(ErrorCode.LAUNCH, /PMI_RANK=1.5/));
  assert.throws(() => detectWireup({ SLURM_PROCID: '0', SLURM_NTASKS: 'four' }), hasCode(ErrorCode.LAUNCH, /SLURM_NTASKS=four/));
  assert.throws(() => detectWireup({ NBC_NODE_RANK: '0' }), hasCode(ErrorCode.LAUNCH, /NBC_NODE_RANK is set but NBC_NODES is not/));
  assert.throws(() => detectWireup({ NBC_NODES: '2', OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '2' }), hasCode(ErrorCode.LAUNCH, /NBC_NODES is set but NBC_NODE_RANK is not/));
  assert.throws(() => detectWireup({}), hasCode(ErrorCode.LAUNCH, /no launcher variables found/));
  assert.throws(() => detectWireup({ NBC_NODE_RANK: '', NBC_NODES: '' }), hasCode(ErrorCode.LAUNCH, /no launcher variables/));
  for (const port of ['-1', '65536', 'http', '80.5']) {
    assert.throws(
      () => detectWireup({ NBC_NODE_RANK: '0', NBC_NODES: '1', NBC_MASTER_PORT: port }),
      hasCode(ErrorCode.LAUNCH, new RegExp(`NBC_MASTER_PORT=${port.replace('.', '\\.')} is not a valid port; expected an integer in 0..65535`)),
    );
  }
  // 0 is valid: node 0 picks a free port and reports it to its launcher (nbc run).
  assert.equal(detectWireup({ NBC_NODE_RANK: '0', NBC_NODES: '1', NBC_MASTER_PORT: '0' }).masterPort, 0);
});

test('detectWireup() rejects an NBC_SECRET that is not 64 hex digits, without echoing it', () => {
  const base = { NBC_NODE_RANK: '0', NBC_NODES: '1' };
  assert.throws(() => detectWireup({ ...base, NBC_SECRET: 'abcd' }), hasCode(ErrorCode.ARG, /is 4 hex digits long; expected exactly 64 hex digits/));
  assert.throws(() => detectWireup({ ...base, NBC_SECRET: SECRET + '0' }), hasCode(ErrorCode.ARG, /is 65 hex digits long/));
  const bad = 'zz' + SECRET.slice(2);
  assert.throws(
    () => detectWireup({ ...base, NBC_SECRET: bad }),
    (e: unknown) => hasCode(ErrorCode.ARG, /64 characters, some of them not hex digits/)(e) && !(e as Error).message.includes(bad),
  );
  assert.equal(detectWireup({ ...base, NBC_SECRET: SECRET.toUpperCase() }).secret?.toString('hex'), SECRET);
});

test('parseSize() reads bytes with binary units', () => {
  assert.equal(parseSize('8'), 8);
  assert.equal(parseSize('0'), 0);
  assert.equal(parseSize('8B'), 8);
  assert.equal(parseSize('4K'), 4096);
  assert.equal(parseSize('4k'), 4096);
  assert.equal(parseSize('4KB'), 4096);
  assert.equal(parseSize('512KiB'), 512 * 1024);
  assert.equal(parseSize('16M'), 16 * 2 ** 20);
  assert.equal(parseSize('16MiB'), 16 * 2 ** 20);
  assert.equal(parseSize('1G'), 2 ** 30);
  assert.equal(parseSize(' 2 GiB '), 2 ** 31);
  assert.equal(parseSize('1T'), 2 ** 40);
  for (const bad of ['', 'K', '1.5K', '-1', '4X', '4 K B', '1e3', '99999999999T']) {
    assert.throws(() => parseSize(bad), hasCode(ErrorCode.ARG, /expected a whole number of bytes/), bad);
  }
});

test('parseSizeRange() lists every power of the step from FROM to TO', () => {
  assert.deepEqual(parseSizeRange('8:64'), [8, 16, 32, 64]);
  const full = parseSizeRange('8:16M');
  assert.equal(full.length, 22);
  assert.equal(full[0], 8);
  assert.equal(full.at(-1), 16 * 2 ** 20);
  for (let i = 1; i < full.length; i++) assert.equal(full[i], 2 * (full[i - 1] as number));
  assert.deepEqual(parseSizeRange('8:16M', 4).slice(0, 4), [8, 32, 128, 512]);
  assert.equal(parseSizeRange('8:16M', 4).at(-1), 8 * 4 ** 10);
  assert.deepEqual(parseSizeRange('1K:1K'), [1024]);
  assert.deepEqual(parseSizeRange('4K'), [4096]);
  assert.deepEqual(parseSizeRange('3:20'), [3, 6, 12]);
  assert.throws(() => parseSizeRange('64:8'), hasCode(ErrorCode.ARG, /expected 1 <= FROM <= TO/));
  assert.throws(() => parseSizeRange('0:8'), hasCode(ErrorCode.ARG, /expected 1 <= FROM <= TO/));
  assert.throws(() => parseSizeRange('8:16:32'), hasCode(ErrorCode.ARG, /expected FROM:TO/));
  assert.throws(() => parseSizeRange('8:1Q'), hasCode(ErrorCode.ARG, /1Q/));
  assert.throws(() => parseSizeRange('8:64', 1), hasCode(ErrorCode.ARG, /step 1 is invalid/));
});
