// The scripted model of the deepagents scenarios (deepagents-scenarios.mjs, deepagents-standard-
// scenarios.mjs): LangChain's fakeModel answering with each turn in order, and a message's text.
import { AIMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';

/** A fake model answering with each turn in order (tool calls, then a final text). */
export function scripted(...turns) {
  let model = fakeModel();
  for (const t of turns)
    model = typeof t === 'string' ? model.respond(new AIMessage(t)) : model.respondWithTools(t);
  return model;
}

/** A message content's text (other parts as `[type]`). */
export const contentText = (content) =>
  typeof content === 'string'
    ? content
    : content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('');
