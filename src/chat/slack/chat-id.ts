/**
 * Slack chat ids: where a reply goes. A DM or a channel is its conversation id (`D…`,
 * `C…`, `G…`); a thread is `<channel>/<thread_ts>`, so a thread is its own chat and its
 * own session (docs/decisions/slack-sessions.md).
 */

/** A chat id's conversation, and the thread in it, if any. */
export interface SlackChat {
  channel: string;
  threadTs?: string;
}

/** `C123` or `C123/1700000000.000100`. */
export function formatSlackChatId(channel: string, threadTs?: string): string {
  return threadTs === undefined ? channel : `${channel}/${threadTs}`;
}

/** The conversation and thread a chat id names. */
export function parseSlackChatId(chatId: string): SlackChat {
  const [channel = chatId, threadTs] = chatId.split("/");
  return threadTs === undefined ? { channel } : { channel, threadTs };
}
