// What every dashboard page shares: loading with sign-out on 401, badges, the refresh pace.

import { useCallback, useEffect, useState } from "preact/hooks";
import { ApiError } from "../api";

export const LIST_REFRESH_MS = 3000;

/// Loads `load()` now and whenever `reload` is called; errors are shown, 401 signs out.
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): [T | null, string, () => void] {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState("");
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let current = true;
    load().then(
      (loaded) => current && (setValue(loaded), setError("")),
      (failure: Error) => {
        if (failure instanceof ApiError && failure.status === 401) dispatchEvent(new Event("signed-out"));
        if (current) setError(failure.message);
      },
    );
    return () => {
      current = false;
    };
  }, [...deps, tick]);
  return [value, error, useCallback(() => setTick((n) => n + 1), [])];
}

export function Badge({ value }: { value: string }) {
  return <span class={`badge ${value}`}>{value}</span>;
}
