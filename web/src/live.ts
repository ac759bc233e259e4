// A WebSocket that comes back: after a drop it reconnects with a growing
// pause (up to 5 s) and says so, so a page can catch up on what it missed.

export interface Live {
  send(data: string): boolean;
  close(): void;
}

export function connect(
  url: string,
  on: { open?: () => void; message: (data: unknown) => void; state?: (connected: boolean) => void },
): Live {
  let socket: WebSocket | null = null;
  let closed = false;
  let pause = 250;
  const retry = () => {
    on.state?.(false);
    if (!closed) {
      setTimeout(open, pause);
      pause = Math.min(pause * 2, 5000);
    }
  };
  const open = () => {
    let current: WebSocket;
    try {
      current = new WebSocket(url);
    } catch {
      // Refused before any connection (the page's Content-Security-Policy, a
      // bad URL): try again like after a drop, instead of stopping for good.
      socket = null;
      retry();
      return;
    }
    socket = current;
    // A socket refused by the Content-Security-Policy may say only `error`:
    // either event ends it, once.
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      retry();
    };
    socket.onerror = end;
    socket.onclose = end;
    socket.onopen = () => {
      pause = 250;
      on.state?.(true);
      on.open?.();
    };
    socket.onmessage = (event) => {
      try {
        on.message(JSON.parse(String(event.data)));
      } catch {
        // a line that is not JSON is not for us
      }
    };
  };
  open();
  return {
    send(data) {
      if (socket?.readyState !== WebSocket.OPEN) return false;
      socket.send(data);
      return true;
    },
    close() {
      closed = true;
      socket?.close();
    },
  };
}
