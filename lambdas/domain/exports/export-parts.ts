/**
 * The smallest part of an export's multipart upload. Every part but the last must be at least
 * 5 MiB, and an upload holds at most 10,000 parts, so parts grow by this much every 1,000: an
 * upload can reach 55,000 × 8 MiB (430 GiB), with 80 MiB parts at the end (and two in memory at once).
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html
 */
export const PART_BYTES = 8 * 1024 * 1024;

/** The least size of part `partNumber` (1–10,000): PART_BYTES, one more for every 1,000 parts before it. */
export const partBytesOf = (partNumber: number) => PART_BYTES * Math.ceil(partNumber / 1000);

/** Lines are joined into chunks of about this many characters before they become bytes. */
const CHUNK_CHARS = 64 * 1024;

/** The lines of a part being filled, as bytes in chunks; the text of the last few lines not yet. */
export class PendingPart {
  private chunks: Buffer[] = [];
  private chunkBytes = 0;
  rows = 0;

  constructor(private text = '') {}

  add(line: string) {
    this.text += line;
    this.rows++;
    if (this.text.length >= CHUNK_CHARS) this.flush();
  }

  /** At least the bytes held (a character is at least one byte of UTF-8). */
  get size() {
    return this.chunkBytes + this.text.length;
  }

  /** The bytes and rows held, which it then forgets. */
  take() {
    this.flush();
    const part = { body: Buffer.concat(this.chunks, this.chunkBytes), rows: this.rows };
    this.chunks = [];
    this.chunkBytes = 0;
    this.rows = 0;
    return part;
  }

  private flush() {
    if (!this.text) return;
    const chunk = Buffer.from(this.text);
    this.chunks.push(chunk);
    this.chunkBytes += chunk.length;
    this.text = '';
  }
}
