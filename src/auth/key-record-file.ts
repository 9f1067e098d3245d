/**
 * The key records file: FLAG_SIDECAR_SNAPSHOT_DIR/key-records.json, written atomically (temp file, fsync,
 * rename, fsync of the directory) with mode 0600, sealed (seal.ts), read once at start. What is read is input
 * like any other: a file that is missing is nothing; one that is not a regular file, may be written by others
 * (group or world writable), is larger than its bound, does not verify (not sealed with this sidecar's secret:
 * forged, altered, or written by an older version) or fails key-records.ts's validation is logged, counted and
 * ignored as a whole — it never stops start-up and never grants anything.
 */
import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Integrity } from '../integrity.js';
import type { Logger } from '../logger.js';
import { sealContext, sealHeaderBytes } from '../seal.js';
import type { Metrics } from '../metrics/metrics.js';
import { writeFileAtomic } from '../store/persist.js';
import { KeyRecordsError, maxRecordsFileBytes, parseKeyRecords, serializeKeyRecords, type KeyRecord } from './key-records.js';

/**
 * Where key records are kept between runs: the interface a shared store (Redis) can implement as well.
 * `load` never rejects (nothing usable: an empty list); `save` replaces every stored record and rejects on failure.
 */
export interface KeyRecordStore {
  load(): Promise<KeyRecord[]>;
  save(records: readonly KeyRecord[]): Promise<void>;
}

/** The records file's name in the snapshot directory. */
export const keyRecordsFileName = 'key-records.json';

/** Dependencies of createKeyRecordFile. */
export interface KeyRecordFileDeps {
  readonly dir: string;
  /** Most records read or written (FLAG_SIDECAR_AUTH_CACHE_MAX). */
  readonly maxRecords: number;
  /** Seals the file, so that only a sidecar holding the secret can write one that is read back. */
  readonly integrity: Integrity;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** How the file is written (tests wrap it); writeFileAtomic by default. */
  readonly write?: (path: string, data: Buffer) => Promise<void>;
}

/** The seal context of the records file. */
const fileContext = sealContext('key-records-file', keyRecordsFileName);

/** Create the file store of key records in `dir`. */
export function createKeyRecordFile(deps: KeyRecordFileDeps): KeyRecordStore {
  const { dir, logger, metrics } = deps;
  const file = join(dir, keyRecordsFileName);
  const write = deps.write ?? writeFileAtomic;

  async function read(): Promise<Buffer | null> {
    const handle = await open(file, 'r').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    if (handle === null) return null;
    try {
      const info = await handle.stat();
      if (!info.isFile()) throw new KeyRecordsError('not a regular file');
      if ((info.mode & 0o022) !== 0) throw new KeyRecordsError(`others may write it (mode ${(info.mode & 0o777).toString(8)})`);
      const limit = maxRecordsFileBytes(deps.maxRecords) + sealHeaderBytes;
      if (info.size > limit) throw new KeyRecordsError(`${info.size} bytes, more than ${limit}`);
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  }

  return {
    async load(): Promise<KeyRecord[]> {
      try {
        const sealed = await read();
        if (sealed === null) return [];
        const text = deps.integrity.sealer.open(sealed, fileContext);
        if (text === null) {
          deps.integrity.unverifiable('key_records_file', file, sealed);
          throw new KeyRecordsError('does not verify (not sealed with this sidecar\'s secret)');
        }
        const records = parseKeyRecords(text.toString('utf8'), deps.maxRecords);
        metrics.keyRecordFile.inc({ operation: 'load', outcome: 'ok' });
        return records;
      } catch (error) {
        metrics.keyRecordFile.inc({ operation: 'load', outcome: 'ignored' });
        logger.warn({ file, err: (error as Error).message }, 'ignoring unusable key records');
        return [];
      }
    },

    async save(records: readonly KeyRecord[]): Promise<void> {
      try {
        await mkdir(dir, { recursive: true });
        await write(file, deps.integrity.sealer.seal(serializeKeyRecords(records, deps.now(), deps.maxRecords), fileContext));
        metrics.keyRecordFile.inc({ operation: 'save', outcome: 'ok' });
      } catch (error) {
        metrics.keyRecordFile.inc({ operation: 'save', outcome: 'failed' });
        throw error;
      }
    },
  };
}
