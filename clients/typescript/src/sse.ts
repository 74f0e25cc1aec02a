/** One dispatched Server-Sent Event. */
export interface SSEEvent {
  /** The `event:` field; "message" when the event named none. */
  event: string;
  data: string;
  /** The last `id:` the stream set, as EventSource's lastEventId. */
  id: string;
}

/** The most data one event may carry, all its lines: the Go client's maxEventBytes (8 MiB; counted here in characters). */
export const maxEventSize = 8 << 20;

/** An event, or a line still unended, past the parser's bound: the stream is not to be trusted further. */
export class SSEEventTooLarge extends Error {
  override name = "SSEEventTooLarge";
}

/**
 * SSEParser is the event-stream interpretation of the HTML standard, fed
 * text as it arrives: lines end with CRLF, LF or CR (a CR at the end of one
 * chunk and an LF at the start of the next are one line end), `:` starts a
 * comment, an empty line dispatches. Written here rather than taken from a
 * package: it is 60 lines, and the client then needs nothing at run time.
 */
export class SSEParser {
  /** The last `retry:` the stream asked for, in milliseconds. */
  retry: number | undefined;
  /** The last `id:` the stream set. */
  lastEventId = "";
  private buf = "";
  private data: string[] = [];
  private event = "";
  private sawCR = false;
  private started = false;
  /** Characters of data the event holds so far. */
  private size = 0;

  /** maxSize bounds an event's data (its lines and the newlines joining them) and an unended line. */
  constructor(readonly maxSize: number = maxEventSize) {}

  /** Takes the next piece of the stream and returns the events it completed. */
  push(chunk: string): SSEEvent[] {
    // An empty piece must not clear sawCR: its LF may still come.
    if (chunk === "") return [];
    if (!this.started && chunk.length > 0) {
      this.started = true;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    if (this.sawCR && chunk.startsWith("\n")) chunk = chunk.slice(1);
    this.sawCR = false;
    const out: SSEEvent[] = [];
    let text = this.buf + chunk;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(text);
      if (!m) break;
      if (m[0] === "\r" && m.index === text.length - 1) {
        this.sawCR = true; // its LF may come in the next chunk
      }
      this.line(text.slice(0, m.index), out);
      text = text.slice(m.index + m[0].length);
    }
    this.buf = text;
    if (this.size + text.length > this.maxSize) throw this.tooLarge();
    return out;
  }

  private tooLarge(): SSEEventTooLarge {
    return new SSEEventTooLarge(`an event of more than ${this.maxSize} characters`);
  }

  private line(line: string, out: SSEEvent[]): void {
    if (line === "") {
      if (this.data.length > 0) {
        out.push({ event: this.event || "message", data: this.data.join("\n"), id: this.lastEventId });
      }
      this.data = [];
      this.event = "";
      this.size = 0;
      return;
    }
    if (line.startsWith(":")) return; // a comment: the server's heartbeat
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.event = value;
        break;
      case "data":
        this.size += value.length + (this.data.length > 0 ? 1 : 0);
        if (this.size > this.maxSize) throw this.tooLarge();
        this.data.push(value);
        break;
      case "id":
        if (!value.includes("\0")) this.lastEventId = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
    }
  }
}
