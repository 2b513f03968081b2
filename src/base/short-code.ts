/**
 * Short codes a person can read aloud and type: pairing codes and approval ids, drawn from
 * one alphabet without look-alikes.
 */
import { createHash, randomInt } from "node:crypto";

/** Letters and digits without look-alikes (0/O, 1/I/L). */
const CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/** A random code of `length` characters. */
export function randomCode(length: number): string {
  let code = "";
  for (let i = 0; i < length; i += 1) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

/** A code of `length` characters (at most 32) that depends only on `text`. */
export function hashedCode(text: string, length: number): string {
  const digest = createHash("sha256").update(text).digest();
  let code = "";
  for (let i = 0; i < length; i += 1) {
    code += CODE_ALPHABET[(digest[i] ?? 0) % CODE_ALPHABET.length];
  }
  return code;
}

/** A typed code as stored: surrounding space removed, upper case. */
export function normalizeCode(typed: string): string {
  return typed.trim().toUpperCase();
}
