// Loads the fleet page in headless Chromium through Playwright and prints what a person (and
// an attacker) would care about, as one JSON object on stdout, for fleet_page.rs to assert:
//   withCert:    the page's text, every request URL it made, dialogs that fired, <img>
//                elements, the response's status and Content-Security-Policy
//   withoutCert: the error a context without a client certificate gets (null if it got in)
// Input comes from the environment (PAGE_URL, CLIENT_CERT, CLIENT_KEY, PAGE_TOKEN,
// PLAYWRIGHT_DIR, CHROMIUM), so the Rust test owns every path and secret.
import { createRequire } from 'node:module';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`check.mjs needs ${name} in its environment`);
  return v;
};
const url = env('PAGE_URL');
const require = createRequire(env('PLAYWRIGHT_DIR') + '/');
const { chromium } = require('playwright-core');

const browser = await chromium.launch({
  executablePath: env('CHROMIUM'),
  // Chromium refuses its sandbox to root, and the tests run as root in CI. The rest keep
  // Chromium itself (updates, sync, field trials) off the network: the test's only traffic
  // is to the server on 127.0.0.1.
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-domain-reliability',
  ],
});

async function visit(options) {
  const context = await browser.newContext({
    // The server's certificate is from the test's own CA, which Chromium does not know.
    ignoreHTTPSErrors: true,
    ...options,
  });
  const page = await context.newPage();
  const requests = [];
  const dialogs = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('dialog', async (d) => {
    dialogs.push(d.message());
    await d.dismiss();
  });
  try {
    const response = await page.goto(url, { waitUntil: 'load', timeout: 30000 });
    const result = {
      status: response.status(),
      csp: response.headers()['content-security-policy'] ?? null,
      text: await page.evaluate(() => document.body.innerText),
      imgs: await page.evaluate(() => document.querySelectorAll('img').length),
      scripts: await page.evaluate(() => document.querySelectorAll('script').length),
      svgs: await page.evaluate(() => document.querySelectorAll('svg').length),
      requests,
      dialogs,
      error: null,
    };
    return result;
  } catch (e) {
    return { error: String(e.message ?? e), requests, dialogs };
  } finally {
    await context.close();
  }
}

const origin = new URL(url).origin;
const withCert = await visit({
  clientCertificates: [
    { origin, certPath: env('CLIENT_CERT'), keyPath: env('CLIENT_KEY') },
  ],
  extraHTTPHeaders: { Authorization: `Bearer ${env('PAGE_TOKEN')}` },
});
const withoutCert = await visit({
  extraHTTPHeaders: { Authorization: `Bearer ${env('PAGE_TOKEN')}` },
});
await browser.close();
process.stdout.write(JSON.stringify({ withCert, withoutCert }) + '\n');
