/** What the installed package says about itself: its version and the Node it needs. */
import { readFileSync } from "node:fs";

/** The fields of package.json picklebot reads. */
export interface PackageInfo {
  name: string;
  version: string;
  /** `engines.node`, such as `>=20.19`. */
  nodeRange: string;
}

/** The root of the installation: the folder holding package.json, bin/ and dist/. */
export const PACKAGE_ROOT = new URL("../../", import.meta.url);

/** Reads the package.json next to src/ (tests) or dist/ (installed). */
export function packageInfo(): PackageInfo {
  const text = readFileSync(new URL("package.json", PACKAGE_ROOT), "utf8");
  const json = JSON.parse(text) as { name: string; version: string; engines?: { node?: string } };
  return { name: json.name, version: json.version, nodeRange: json.engines?.node ?? ">=20" };
}
