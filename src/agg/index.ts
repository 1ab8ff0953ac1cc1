/**
 * In-network aggregation in software (seed 003, SHArP): the fabric (manager and daemons), its
 * client, and what it supports. See docs/agg.md.
 */
export { AggClient, type AggClientOptions, type AggGroup } from './client.js';
export {
  adminRequest, aggStatePath, fabricFromEnv, fabricStatus, parseAggSpec, parseHostPort, readFabricState, startFabric,
  stopFabricAt, type FabricHandle, type FabricOptions, type FabricState,
} from './fabric.js';
export { AGG_DTYPES, AGG_OPS, aggSupports, fragmentBytes, fragmentCount, fragmentUnit } from './wire.js';
