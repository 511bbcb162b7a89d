/**
 * A throwaway certificate authority for wss tests, made with Debian's
 * `openssl`: a CA and a server certificate for localhost, 127.0.0.1 and ::1.
 *
 * @module
 */

/** PEM texts of a test CA and a server certificate it signed. */
export interface TestCa {
  /** The CA certificate: what a dialer passes as `caCerts` / `--ca`. */
  caPem: string;
  /** The server's certificate chain and key: `--cert`, `--key`. */
  certPem: string;
  keyPem: string;
  /** The files of the three, in `dir`. */
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** True when `openssl` can run here (tests that need it are skipped otherwise). */
export function hasOpenssl(): boolean {
  try {
    return new Deno.Command("openssl", { args: ["version"], stdout: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

async function openssl(dir: string, args: string[]): Promise<void> {
  const out = await new Deno.Command("openssl", {
    args,
    cwd: dir,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `openssl ${args[0]}: ${new TextDecoder().decode(out.stderr).trim()}`,
    );
  }
}

/**
 * Makes a CA and a localhost server certificate in `dir` (P-256, 2 days).
 *
 * @example
 * ```ts ignore
 * const ca = await makeTestCa(await Deno.makeTempDir());
 * console.log(ca.caPem.startsWith("-----BEGIN CERTIFICATE-----"));
 * ```
 */
export async function makeTestCa(dir: string): Promise<TestCa> {
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"];
  await openssl(dir, [
    "req",
    "-x509",
    ...ec,
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "2",
    "-subj",
    "/CN=awp test CA",
  ]);
  await openssl(dir, [
    "req",
    ...ec,
    "-nodes",
    "-keyout",
    "server.key",
    "-out",
    "server.csr",
    "-subj",
    "/CN=localhost",
  ]);
  await Deno.writeTextFile(
    `${dir}/server.ext`,
    "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\n",
  );
  await openssl(dir, [
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.pem",
    "-days",
    "2",
    "-extfile",
    "server.ext",
  ]);
  const read = (name: string) => Deno.readTextFile(`${dir}/${name}`);
  return {
    caPem: await read("ca.pem"),
    certPem: await read("server.pem"),
    keyPem: await read("server.key"),
    caFile: `${dir}/ca.pem`,
    certFile: `${dir}/server.pem`,
    keyFile: `${dir}/server.key`,
  };
}
