/**
 * Reading one file out of a .zip archive with Node alone (no `unzip` binary): the end-of-central-directory record
 * and the central directory locate the entry, node:zlib inflates it, and its CRC-32 and size are checked.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { crc32, inflateRawSync } from 'node:zlib';

const endOfCentralDirectory = 0x06054b50;
const centralFileHeader = 0x02014b50;
const localFileHeader = 0x04034b50;

/**
 * The bytes of the entry `name` (its full path inside the archive, e.g. `helm/helm`) of the zip file at
 * `zipPath`. Supports stored (0) and deflated (8) entries of archives below 4 GiB (no ZIP64). Throws an Error
 * naming the archive when it is not a zip, has no such entry, uses another compression method, or the
 * inflated bytes do not match the recorded size and CRC-32.
 */
export function readZipEntry(zipPath: string, name: string): Buffer {
  const fd = openSync(zipPath, 'r');
  try {
    const read = (position: number, length: number): Buffer => {
      const buffer = Buffer.alloc(length);
      const got = readSync(fd, buffer, 0, length, position);
      if (got !== length) throw new Error(`${zipPath}: truncated zip (wanted ${length} bytes at ${position}, got ${got})`);
      return buffer;
    };
    const size = fstatSync(fd).size;
    // The end record is 22 bytes plus a comment of at most 65535 bytes, at the very end of the file.
    const tailLength = Math.min(size, 22 + 0xffff);
    const tail = read(size - tailLength, tailLength);
    let end = -1;
    for (let i = tailLength - 22; i >= 0; i -= 1) {
      if (tail.readUInt32LE(i) === endOfCentralDirectory) {
        end = i;
        break;
      }
    }
    if (end < 0) throw new Error(`${zipPath}: not a zip file (no end-of-central-directory record)`);
    const entries = tail.readUInt16LE(end + 10);
    const directorySize = tail.readUInt32LE(end + 12);
    const directoryOffset = tail.readUInt32LE(end + 16);
    if (entries === 0xffff || directoryOffset === 0xffffffff) throw new Error(`${zipPath}: ZIP64 archives are not supported`);
    const directory = read(directoryOffset, directorySize);
    let at = 0;
    for (let i = 0; i < entries; i += 1) {
      if (directory.readUInt32LE(at) !== centralFileHeader) throw new Error(`${zipPath}: corrupt central directory at entry ${i}`);
      const method = directory.readUInt16LE(at + 10);
      const crc = directory.readUInt32LE(at + 16);
      const compressedSize = directory.readUInt32LE(at + 20);
      const uncompressedSize = directory.readUInt32LE(at + 24);
      const nameLength = directory.readUInt16LE(at + 28);
      const extraLength = directory.readUInt16LE(at + 30);
      const commentLength = directory.readUInt16LE(at + 32);
      const localOffset = directory.readUInt32LE(at + 42);
      const entryName = directory.toString('utf8', at + 46, at + 46 + nameLength);
      at += 46 + nameLength + extraLength + commentLength;
      if (entryName !== name) continue;
      if (compressedSize === 0xffffffff || uncompressedSize === 0xffffffff || localOffset === 0xffffffff) throw new Error(`${zipPath}: ${name} is a ZIP64 entry, which is not supported`);
      const local = read(localOffset, 30);
      if (local.readUInt32LE(0) !== localFileHeader) throw new Error(`${zipPath}: corrupt local header of ${name}`);
      const dataOffset = localOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
      const compressed = read(dataOffset, compressedSize);
      let data: Buffer;
      if (method === 0) data = compressed;
      else if (method === 8) data = inflateRawSync(compressed);
      else throw new Error(`${zipPath}: ${name} uses compression method ${method} (only stored and deflated are supported)`);
      if (data.length !== uncompressedSize || crc32(data) !== crc) throw new Error(`${zipPath}: ${name} is corrupt (size or CRC-32 mismatch)`);
      return data;
    }
    throw new Error(`${zipPath}: no entry ${name}`);
  } finally {
    closeSync(fd);
  }
}
