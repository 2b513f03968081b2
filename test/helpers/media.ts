/** Files a test sends as a person would: photos, PDFs, voice notes, and broken ones. */
import { deflateSync } from "node:zlib";
import sharp from "sharp";

/** A JPEG photo of `width` × `height` px, with some detail so it does not compress to nothing. */
export async function photo(width: number, height: number): Promise<Buffer> {
  const channels = 3;
  const raw = Buffer.alloc(width * height * channels);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 7 + Math.floor(i / 97)) % 256;
  return sharp(raw, { raw: { width, height, channels } }).jpeg({ quality: 90 }).toBuffer();
}

/** A small valid PDF of `pages` pages. */
export function pdf(pages = 1, { encrypted = false } = {}): Buffer {
  const kids = Array.from({ length: pages }, (_, i) => `${i + 3} 0 R`).join(" ");
  const pageObjects = Array.from(
    { length: pages },
    (_, i) => `${i + 3} 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >> endobj\n`,
  ).join("");
  const trailer = encrypted ? "/Encrypt 99 0 R " : "";
  return Buffer.from(
    `%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [${kids}] /Count ${pages} >> endobj\n${pageObjects}trailer << ${trailer}/Root 1 0 R >>\n%%EOF\n`,
    "latin1",
  );
}

/**
 * A PDF of `pages` pages as PDF 1.5 and later write them: the page tree and every page
 * object inside a compressed object stream, so no `/Type /Page` shows in the file itself.
 */
export function compressedPdf(pages: number): Buffer {
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    `<< /Type /Pages /Kids [${Array.from({ length: pages }, (_, i) => `${i + 3} 0 R`).join(" ")}] /Count ${pages} >>`,
    ...Array.from(
      { length: pages },
      () => "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
    ),
  ];
  let offset = 0;
  const index: string[] = [];
  for (const [i, object] of objects.entries()) {
    index.push(`${i + 1} ${offset}`);
    offset += object.length + 1;
  }
  const head = `${index.join(" ")}\n`;
  const packed = deflateSync(Buffer.from(head + objects.join("\n"), "latin1"));
  const dictionary = `<< /Type /ObjStm /N ${objects.length} /First ${head.length} /Filter /FlateDecode /Length ${packed.length} >>`;
  return Buffer.concat([
    Buffer.from(`%PDF-1.7\n${objects.length + 1} 0 obj ${dictionary}\nstream\n`, "latin1"),
    packed,
    Buffer.from("\nendstream\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF\n", "latin1"),
  ]);
}

/** The first bytes of an OGG/Opus voice note (what Telegram records), enough for a transcriber's sniffing. */
export function voiceNote(): Buffer {
  return Buffer.concat([Buffer.from("OggS"), Buffer.alloc(200, 1)]);
}

/** Audio in a codec the speech services do not decode (AMR). */
export function amrAudio(): Buffer {
  return Buffer.concat([Buffer.from("#!AMR\n"), Buffer.alloc(200, 2)]);
}
