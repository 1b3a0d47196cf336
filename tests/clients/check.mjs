// lore-mcp through the TypeScript MCP SDK client (the one Claude Code is built on), over
// stdio and over Streamable HTTP. The client validates every structured tool result
// against the tool's output schema; this script calls every tool, reads resources and
// their template, gets both prompts, asks for completions and sets the log level.
//
//   npm install --prefix tests/clients && node tests/clients/check.mjs [LORE_MCP]
//
// LORE_MCP is the server command (default: lore-mcp on PATH). Each transport gets its own
// copy of brain/. Prints one line per check; exits 1 if any failed.

import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const COMMAND = process.argv[2] ?? "lore-mcp";
let failures = 0;

function vaultCopy() {
  const dir = mkdtempSync(join(tmpdir(), "lore-ts-"));
  const vault = join(dir, "brain");
  cpSync(join(ROOT, "brain"), vault, { recursive: true, filter: (src) => !src.includes(".lore") });
  return { dir, vault };
}

async function check(transport, what, fn) {
  try {
    const note = await fn();
    console.log(`ok    ${transport}  ${what}${typeof note === "string" ? `: ${note}` : ""}`);
  } catch (error) {
    failures += 1;
    console.log(`FAIL  ${transport}  ${what}: ${error?.message ?? error}`);
  }
}

function expect(condition, message) {
  if (!condition) throw new Error(message);
}

async function call(client, name, args, { error = false } = {}) {
  const result = await client.callTool({ name, arguments: args });
  expect(Boolean(result.isError) === error, `isError ${result.isError}: ${JSON.stringify(result.content)}`);
  if (!error) expect(result.structuredContent, "no structured content");
  return result;
}

async function exercise(client, transport) {
  const t = transport;
  await check(t, "tools/list", async () => {
    const { tools } = await client.listTools();
    expect(tools.length === 9, `${tools.length} tools`);
    return `${JSON.stringify(tools).length} characters`;
  });
  await check(t, "read_page", async () => (await call(client, "read_page", { slug: "Index" })).structuredContent.title);
  await check(t, "read_page of a placeholder", () => call(client, "read_page", { slug: "roadmap" }));
  await check(t, "read_page of no page", () => call(client, "read_page", { slug: "no-such-page" }, { error: true }));
  await check(t, "save_page (create)", () =>
    call(client, "save_page", { slug: "TS Check", content: "# TS Check\n\n## Notes\n\nabout [[Index]]\n" }));
  await check(t, "save_page append", () => call(client, "save_page", { slug: "TS Check", content: "more\n", mode: "append" }));
  await check(t, "save_page edit", () =>
    call(client, "save_page", { slug: "TS Check", mode: "edit", old_text: "more", content: "much more" }));
  await check(t, "save_page section", () =>
    call(client, "save_page", { slug: "TS Check", mode: "section", heading: "Notes", content: "new notes\n" }));
  await check(t, "read_page version", async () => {
    const view = (await call(client, "read_page", { slug: "TS Check" })).structuredContent;
    expect(view.kept_versions >= 3, `${view.kept_versions} versions`);
    return (await call(client, "read_page", { slug: "TS Check", version: 1 })).structuredContent.version.tool;
  });
  await check(t, "save_page restore", () => call(client, "save_page", { slug: "TS Check", mode: "restore" }));
  await check(t, "save_page of a near name is refused", () =>
    call(client, "save_page", { slug: "C#", content: "x" }, { error: true }));
  await check(t, "search", async () => `${(await call(client, "search", { query: "link resolution" })).structuredContent.hits.length} hits`);
  await check(t, "search_titles", () => call(client, "search_titles", { query: "link" }));
  await check(t, "list_pages", () => call(client, "list_pages", { sort: "modified", limit: 5 }));
  await check(t, "get_backlinks", () => call(client, "get_backlinks", { slug: "Index", include_unlinked: true }));
  await check(t, "get_graph (shape)", () => call(client, "get_graph", {}));
  await check(t, "get_graph (neighbourhood)", () => call(client, "get_graph", { slug: "Index", depth: 2 }));
  await check(t, "rename_page", () => call(client, "rename_page", { slug: "TS Check", new_name: "notes/TS Checked" }));
  await check(t, "delete_page", () => call(client, "delete_page", { slug: "notes/TS Checked" }));
  await check(t, "save_page restores the deleted page", () =>
    call(client, "save_page", { slug: "notes/TS Checked", mode: "restore" }));
  await check(t, "resources/list", async () => {
    let cursor;
    let count = 0;
    do {
      const page = await client.listResources(cursor ? { cursor } : {});
      count += page.resources.length;
      cursor = page.nextCursor;
    } while (cursor);
    expect(count >= 18, `${count} resources`);
    return `${count} pages`;
  });
  await check(t, "resources/read", async () => {
    const { resources } = await client.listResources();
    const read = await client.readResource({ uri: resources[0].uri });
    expect(read.contents[0].text.length > 0, "empty");
  });
  await check(t, "resources/templates/list and a template read", async () => {
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.length === 1, `${resourceTemplates.length} templates`);
    const read = await client.readResource({ uri: "lore://page/concepts/slugs" });
    expect(read.contents[0].mimeType === "text/markdown", read.contents[0].mimeType);
  });
  await check(t, "prompts/list", async () => {
    const { prompts } = await client.listPrompts();
    return prompts.map((p) => p.name).join(", ");
  });
  await check(t, "prompts/get start_session", async () => {
    const got = await client.getPrompt({ name: "start_session", arguments: { topic: "links" } });
    expect(got.messages[0].content.text.includes("home page"), "no home page");
  });
  await check(t, "prompts/get record", () =>
    client.getPrompt({ name: "record", arguments: { summary: "The check ran.", page: "Index" } }));
  await check(t, "completion of a page slug", async () => {
    const done = await client.complete({
      ref: { type: "ref/resource", uri: "lore://page/{+slug}" },
      argument: { name: "slug", value: "link" },
    });
    expect(done.completion.values.length >= 2, JSON.stringify(done.completion));
  });
  await check(t, "completion of a prompt argument", async () => {
    const done = await client.complete({ ref: { type: "ref/prompt", name: "record" }, argument: { name: "page", value: "ren" } });
    expect(done.completion.values.includes("tools/renaming"), JSON.stringify(done.completion));
  });
  await check(t, "logging/setLevel", () => client.setLoggingLevel("warning"));
}

async function overStdio() {
  const { dir, vault } = vaultCopy();
  const client = new Client({ name: "lore-ts-check", version: "1.0.0" });
  try {
    await client.connect(new StdioClientTransport({ command: COMMAND, args: ["--vault", vault, "--no-watch"], stderr: "ignore" }));
    await exercise(client, "stdio");
  } finally {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function listening(server) {
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`no address announced: ${seen}`)), 60000);
    server.stderr.on("data", (chunk) => {
      seen += chunk.toString();
      const found = seen.match(/listening on (http:\/\/\S+\/mcp)/);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    server.on("exit", (code) => reject(new Error(`the server exited (${code}): ${seen}`)));
  });
}

async function overHttp() {
  const { dir, vault } = vaultCopy();
  const token = randomBytes(24).toString("base64url");
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  const server = spawn(COMMAND, ["--vault", vault, "--no-watch", "--http", "--port", "0", "--token-file", tokenFile], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const client = new Client({ name: "lore-ts-check", version: "1.0.0" });
  try {
    const url = await listening(server);
    const headers = { Authorization: `Bearer ${token}` };
    await check("http ", "a request without the token is refused", async () => {
      const response = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
      expect(response.status === 401, `status ${response.status}`);
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    await exercise(client, "http ");
  } finally {
    await client.close();
    server.kill("SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

await overStdio();
await overHttp();
console.log(failures ? `${failures} checks failed` : "every check passed");
process.exit(failures ? 1 : 0);
