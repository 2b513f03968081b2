/**
 * Keeps the head and the tail of a stream of output within a byte budget, counting
 * what falls in between, so a command that prints megabytes costs a few kilobytes.
 */
export class OutputCollector {
  private readonly headLimit: number;
  private readonly tailLimit: number;
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer = Buffer.alloc(0);
  private totalBytes = 0;

  /** @param maxBytes bytes kept: half from the start, half from the end. */
  constructor(maxBytes: number) {
    this.headLimit = Math.ceil(maxBytes / 2);
    this.tailLimit = Math.floor(maxBytes / 2);
  }

  /** Adds the next chunk of output. */
  add(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    const forHead = Math.min(chunk.length, this.headLimit - this.headBytes);
    if (forHead > 0) {
      this.head.push(chunk.subarray(0, forHead));
      this.headBytes += forHead;
    }
    const rest = chunk.subarray(forHead);
    if (rest.length === 0) return;
    const joined = Buffer.concat([this.tail, rest]);
    this.tail = Buffer.from(joined.subarray(Math.max(0, joined.length - this.tailLimit)));
  }

  /** The output as text, with `[… N bytes of output omitted …]` where it was cut. */
  text(): string {
    const head = Buffer.concat(this.head).toString("utf8");
    const omitted = this.totalBytes - this.headBytes - this.tail.length;
    if (omitted === 0) return head + this.tail.toString("utf8");
    return `${head}\n[… ${omitted} bytes of output omitted …]\n${this.tail.toString("utf8")}`;
  }
}
