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
  const open = () => {
    socket = new WebSocket(url);
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
    socket.onclose = () => {
      on.state?.(false);
      if (!closed) {
        setTimeout(open, pause);
        pause = Math.min(pause * 2, 5000);
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
