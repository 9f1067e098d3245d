/**
 * A listener that could not be had (the address in use, a privileged port, an address of no interface): what the
 * process says when it exits 1 at start, naming the address and the setting that chose it.
 */
import type { ListenAddress } from '../config/parsers.js';

/** Why `listen` failed, in words, by its error code (else node's message). */
function reason(error: unknown): string {
  switch ((error as NodeJS.ErrnoException | null)?.code) {
    case 'EADDRINUSE':
      return 'the address is already in use (another process listens there)';
    case 'EACCES':
      return 'permission denied (a port below 1024 needs privileges)';
    case 'EADDRNOTAVAIL':
      return 'no interface of this machine has that address';
    default:
      return error instanceof Error ? error.message : String(error);
  }
}

/** A listener that failed to start; its message is one line naming the address and the setting. */
export class ListenError extends Error {
  constructor(setting: string, address: ListenAddress, cause: unknown) {
    const where = address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
    super(`cannot listen on ${where} (${setting}): ${reason(cause)}`, { cause });
    this.name = 'ListenError';
  }
}
