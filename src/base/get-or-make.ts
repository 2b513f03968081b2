/** What {@link getOrMake} keeps values in: a `Map`, or a `WeakMap` for object keys. */
interface KeyedStore<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V): unknown;
}

/** `map`'s value for `key`, made by `make` (and kept) the first time it is asked for. */
export function getOrMake<K, V>(map: KeyedStore<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}
