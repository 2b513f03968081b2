/**
 * The files of web chats and session pages, over HTTP against the real dashboard app:
 * uploads in the chat box (stored content-addressed, queued as the files of the turn),
 * and the files a session references, served to the owner only, only for that session,
 * with the headers that keep a browser from running them.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MediaStore } from "../../src/agents/media/store.js";
import type { ChatMessage, Session } from "../../src/ports/index.js";
import { MAX_UPLOAD_BYTES } from "../../src/web/session-files.js";
import { csrfTokenOf, type DashboardHarness, openDashboard } from "../helpers/dashboard.js";
import { pdf, photo } from "../helpers/media.js";

let harness: DashboardHarness;
afterEach(() => harness?.close());

function media(): MediaStore {
  return new MediaStore(harness.config.history.path);
}

async function webSession(): Promise<Session> {
  return harness.storage.history.createSession({ key: "web:pickle:ab12", agentId: "pickle" });
}

/** A chat box's post: its message and files, as a browser sends them (multipart). */
function upload(
  csrf: string,
  message: string,
  files: Array<{ name: string; type: string; bytes: Uint8Array }>,
): RequestInit {
  const body = new FormData();
  body.set("_csrf", csrf);
  body.set("message", message);
  for (const file of files) {
    body.append("file", new File([file.bytes], file.name, { type: file.type }));
  }
  return { method: "POST", body, headers: { "hx-request": "true" } };
}

async function jobsOf(session: Session) {
  return harness.storage.queue.list({ sessionKey: session.key });
}

describe("an upload in the web chat", () => {
  it("stores the photo content-addressed and queues it as an image of the turn, with the message", async () => {
    harness = await openDashboard();
    const session = await webSession();
    const bytes = await photo(400, 300);
    const response = await harness.request(
      `/sessions/${session.id}/chat`,
      upload(await csrfTokenOf(harness), "what is in this picture?", [
        { name: "cat.jpg", type: "image/jpeg", bytes },
      ]),
    );
    expect(response.status).toBe(200);
    const [job] = await jobsOf(session);
    expect(job?.message).toBe("what is in this picture?");
    expect(job?.attachments).toEqual([
      {
        kind: "image",
        source: expect.stringMatching(/^upload:[0-9a-f]{64}$/),
        name: "cat.jpg",
        mimeType: "image/jpeg",
        size: bytes.byteLength,
      },
    ]);
    // The job finds the bytes without a download.
    const sha256 = await media().downloaded(job?.attachments[0]?.source ?? "");
    expect(sha256).toMatch(/^[0-9a-f]{64}$/);
    expect((await media().read(sha256 ?? "")).equals(bytes)).toBe(true);
    // The page shows the file with the pending message.
    expect(await response.text()).toContain("with cat.jpg");
  });

  it("starts a new chat with only a file, no words", async () => {
    harness = await openDashboard();
    const csrf = await csrfTokenOf(harness);
    const init = upload(csrf, "", [{ name: "report.pdf", type: "application/pdf", bytes: pdf(2) }]);
    (init.body as FormData).set("agent", "scout");
    const response = await harness.request("/sessions/new", { ...init, headers: {} });
    expect(response.status).toBe(303);
    const session = await harness.storage.history.getSession(
      response.headers.get("location")?.replace("/sessions/", "") ?? "",
    );
    const [job] = await harness.storage.queue.list({ sessionKey: session?.key });
    expect(job?.attachments).toMatchObject([{ kind: "document", name: "report.pdf" }]);
  });

  it("answers 413 naming the limit for an upload over it, and queues nothing", async () => {
    harness = await openDashboard();
    const session = await webSession();
    const big = new Uint8Array(MAX_UPLOAD_BYTES + 1);
    const response = await harness.request(
      `/sessions/${session.id}/chat`,
      upload(await csrfTokenOf(harness), "a big one", [
        { name: "huge.bin", type: "application/octet-stream", bytes: big },
      ]),
    );
    expect(response.status).toBe(413);
    expect(await response.text()).toContain(`at most ${MAX_UPLOAD_BYTES} bytes (32 MiB)`);
    expect(await jobsOf(session)).toEqual([]);
  });

  it("answers 413 from the declared length alone, before reading the body", async () => {
    harness = await openDashboard();
    const session = await webSession();
    const response = await harness.request(`/sessions/${session.id}/chat`, {
      method: "POST",
      headers: {
        "content-type": "multipart/form-data; boundary=x",
        "content-length": String(MAX_UPLOAD_BYTES + 1),
        "x-csrf-token": await csrfTokenOf(harness),
      },
      body: "--x--\r\n",
    });
    expect(response.status).toBe(413);
    expect(await response.text()).toContain("32 MiB");
  });

  it("refuses an empty file by its name, and queues nothing", async () => {
    harness = await openDashboard();
    const session = await webSession();
    const response = await harness.request(
      `/sessions/${session.id}/chat`,
      upload(await csrfTokenOf(harness), "read this", [
        { name: "empty.txt", type: "text/plain", bytes: new Uint8Array(0) },
      ]),
    );
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('"empty.txt" is empty (0 bytes)');
    expect(await jobsOf(session)).toEqual([]);
  });

  it("takes a file input left empty as no file, and refuses a post with neither words nor files", async () => {
    harness = await openDashboard();
    const session = await webSession();
    const csrf = await csrfTokenOf(harness);
    const init = upload(csrf, "", [
      { name: "", type: "application/octet-stream", bytes: new Uint8Array(0) },
    ]);
    const response = await harness.request(`/sessions/${session.id}/chat`, init);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("write something or attach a file");
    expect(await jobsOf(session)).toEqual([]);
  });

  it("refuses an upload without the access token (401) or without the CSRF token (403)", async () => {
    harness = await openDashboard();
    const session = await webSession();
    const files = [{ name: "cat.jpg", type: "image/jpeg", bytes: await photo(50, 50) }];
    const csrf = await csrfTokenOf(harness);
    const anonymous = await harness.anonymous(
      `/sessions/${session.id}/chat`,
      upload(csrf, "hi", files),
    );
    expect(anonymous.status).toBe(401);
    const noCsrf = await harness.request(`/sessions/${session.id}/chat`, upload("", "hi", files));
    expect(noCsrf.status).toBe(403);
    expect(await jobsOf(session)).toEqual([]);
  });
});

/** A session whose messages hold a photo and a PDF, and whose web chat got an HTML file. */
async function sessionWithFiles() {
  const session = await webSession();
  const store = media();
  const image = await photo(320, 200);
  const document = pdf(3);
  const page = Buffer.from("<script>alert(1)</script>");
  const [imageRef, pdfRef, pageRef] = await Promise.all([
    store.put(image),
    store.put(document),
    store.put(page),
  ]);
  const messages: ChatMessage[] = [
    {
      role: "user",
      content: [
        {
          type: "image",
          mediaType: "image/jpeg",
          media: { ...imageRef, name: "cat.jpg" },
          width: 320,
          height: 200,
        },
        {
          type: "document",
          mediaType: "application/pdf",
          media: { ...pdfRef, name: "report.pdf" },
          pages: 3,
        },
        { type: "text", text: "what are these?" },
      ],
    },
    {
      role: "assistant",
      content: [
        { type: "tool_use", id: "call-7", name: "send_file", input: { path: "page.html" } },
      ],
    },
    {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "call-7", content: "sent page.html" }],
    },
  ];
  for (const message of messages) await harness.storage.history.append(session.id, message);
  await store.rememberSent(session.id, {
    ...pageRef,
    name: "page.html",
    mediaType: "text/html",
    caption: "the page you asked for",
    callId: "call-7",
  });
  return { session, image, document, page, imageRef, pdfRef, pageRef };
}

describe("the files of a session page", () => {
  it("shows images as thumbnails and every file with its name, type and size", async () => {
    harness = await openDashboard();
    const { session, imageRef, pdfRef, pageRef } = await sessionWithFiles();
    const html = await (await harness.request(`/sessions/${session.id}`)).text();
    const url = (sha256: string) => `/sessions/${session.id}/files/${sha256}`;
    expect(html).toContain(`<img class="thumbnail" src="${url(imageRef.sha256)}" alt="cat.jpg"`);
    expect(html).toMatch(
      /cat\.jpg<\/a> <span class="muted">\(image\/jpeg, [\d.]+ kB, 320×200 px\)/,
    );
    expect(html).toMatch(
      /report\.pdf<\/a> <span class="muted">\(application\/pdf, \d+ B, 3 pages\)/,
    );
    expect(html).toContain(`href="${url(pdfRef.sha256)}"`);
    // What send_file sent into the web chat: a link under its call, with the caption.
    expect(html).toContain(`href="${url(pageRef.sha256)}"`);
    expect(html).toMatch(/page\.html<\/a> <span class="muted">\(text\/html, 25 B\)/);
    expect(html).toContain("the page you asked for");
  });

  it("serves an image inline with its type, and nosniff", async () => {
    harness = await openDashboard();
    const { session, image, imageRef } = await sessionWithFiles();
    const response = await harness.request(`/sessions/${session.id}/files/${imageRef.sha256}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("image/jpeg");
    expect(response.headers.get("content-disposition")).toBe(
      `inline; filename="cat.jpg"; filename*=UTF-8''cat.jpg`,
    );
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(Buffer.from(await response.arrayBuffer()).equals(image)).toBe(true);
  });

  it("serves a PDF and an HTML file as attachments, never to run in the page", async () => {
    harness = await openDashboard();
    const { session, document, pdfRef, pageRef } = await sessionWithFiles();
    const pdfResponse = await harness.request(`/sessions/${session.id}/files/${pdfRef.sha256}`);
    expect(pdfResponse.headers.get("content-type")).toBe("application/pdf");
    expect(pdfResponse.headers.get("content-disposition")).toMatch(
      /^attachment; filename="report.pdf"/,
    );
    expect(Buffer.from(await pdfResponse.arrayBuffer()).equals(document)).toBe(true);
    const page = await harness.request(`/sessions/${session.id}/files/${pageRef.sha256}`);
    expect(page.headers.get("content-type")).toBe("text/html");
    expect(page.headers.get("content-disposition")).toMatch(/^attachment; filename="page.html"/);
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
  });

  it("serves only files of that session: another session's file, a made-up digest and paths are 404", async () => {
    harness = await openDashboard();
    const { session, imageRef } = await sessionWithFiles();
    const other = await harness.storage.history.createSession({
      key: "web:pickle:cd34",
      agentId: "pickle",
    });
    const token = harness.token;
    const refused = [
      `/sessions/${other.id}/files/${imageRef.sha256}`,
      `/sessions/${session.id}/files/${"0".repeat(64)}`,
      `/sessions/${session.id}/files/..%2F..%2Fhttp-token`,
      `/sessions/${session.id}/files/%2E%2E%2Fhttp-token`,
      `/sessions/${session.id}/files/sources`,
      `/sessions/${session.id}/files/${imageRef.sha256}.transcript.txt`,
      `/sessions/${session.id}/files/${imageRef.sha256}%2F..%2F..%2Fhttp-token`,
    ];
    for (const path of refused) {
      const response = await harness.request(path);
      expect(response.status, path).toBe(404);
      expect(await response.text(), path).not.toContain(token);
    }
    const dotted = await harness.request(`/sessions/${session.id}/files/../../http-token`);
    expect(dotted.status).not.toBe(200);
    expect(await dotted.text()).not.toContain(token);
    expect((await harness.request(`/sessions/nope/files/${imageRef.sha256}`)).status).toBe(404);
  });

  it("serves nothing without the access token", async () => {
    harness = await openDashboard();
    const { session, imageRef } = await sessionWithFiles();
    const response = await harness.anonymous(`/sessions/${session.id}/files/${imageRef.sha256}`);
    expect(response.status).toBe(401);
  });
});
