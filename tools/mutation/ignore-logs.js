// @ts-check
/**
 * A Stryker ignorer: leaves the arguments of log calls (`logger.info(...)`, `log.warn(...)`)
 * unmutated. Log text and log fields are for people reading logs, not behaviour a test can or
 * should pin down; mutating them only adds survivors that say nothing about safety. Metrics and
 * history events are not log calls: they stay mutated. Plain JavaScript because Stryker loads
 * plugins with a bare import, without the TypeScript loader the rest of the repo runs under.
 */
import { declareValuePlugin, PluginKind } from '@stryker-mutator/api/plugin';

const LOG_LEVELS = new Set(['debug', 'info', 'warn', 'error']);
const LOGGER = /^(logger|log|baseLogger)$/;

/** The name an expression ends in: `logger` for `logger`, `deps.logger` and `this.logger`. */
function tailName(node) {
  if (!node) return undefined;
  if (node.type === 'Identifier') return node.name;
  if (node.type === 'MemberExpression' && !node.computed && node.property.type === 'Identifier') return node.property.name;
  if (node.type === 'OptionalMemberExpression' && !node.computed && node.property.type === 'Identifier') return node.property.name;
  return undefined;
}

/** True for `logger.warn(...)`, `logger?.info(...)`, `deps.logger.error(...)`. */
function isLogCall(node) {
  if (node.type !== 'CallExpression' && node.type !== 'OptionalCallExpression') return false;
  const callee = node.callee;
  if ((callee.type !== 'MemberExpression' && callee.type !== 'OptionalMemberExpression') || callee.computed) return false;
  return callee.property.type === 'Identifier' && LOG_LEVELS.has(callee.property.name) && LOGGER.test(tailName(callee.object) ?? '');
}

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, 'log-text', {
    /** @param {{ node: any }} path */
    shouldIgnore(path) {
      return isLogCall(path.node) ? 'log text is not behaviour' : undefined;
    },
  }),
];
