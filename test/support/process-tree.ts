/**
 * Processes as Linux's /proc shows them, for tests about what a signal leaves behind: the descendants of a
 * process, and whether one is still running (a zombie, dead and not yet reaped, is not).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** A process's parent and state letter from /proc/<pid>/stat, or null when there is no such process. */
function statOf(pid: number): { ppid: number; state: string } | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so the fields after its last ")".
  const [state, ppid] = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(ppid), state: state ?? '?' };
}

/** Every process whose chain of parents leads to `root` (children, grandchildren …), now. */
export function descendants(root: number): number[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = statOf(Number(name));
    if (stat !== null) parents.set(Number(name), stat.ppid);
  }
  const found: number[] = [];
  const wanted = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, ppid] of parents) {
      if (wanted.has(ppid) && !wanted.has(pid)) {
        wanted.add(pid);
        found.push(pid);
        grew = true;
      }
    }
  }
  return found;
}

/** Whether `pid` is a running process (not gone, not a zombie). */
export function running(pid: number): boolean {
  const stat = statOf(pid);
  return stat !== null && stat.state !== 'Z' && stat.state !== 'X';
}
