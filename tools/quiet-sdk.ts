/**
 * Imported first by the command-line tools: the AWS SDK warns on every start that releases after
 * January 2027 will need Node 22. Node 20 is supported here and the Lambdas run nodejs22.x, so the
 * notice is noise in a local terminal.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
