/**
 * The AWS SDK calls a Lambda entry point can make, derived from the code with the TypeScript
 * checker: a call graph from the entry file's module code, following every function, method,
 * variable and class it references (an interface method call reaches the same-named method of
 * every class the reached code instantiates), collecting each `new XxxCommand(...)` of an AWS SDK
 * package. Per call it records the class it is made in (which says which resource it lands on,
 * FUNCTION_ACCESS's callers table), whether it names an index, and the kinds of item a
 * transaction in the same function carries. Methods of a class that nothing reached calls are not
 * reached: the planner bundles the whole Ledger class but is granted only what it calls.
 */
import { dirname, relative } from 'node:path';
import ts from 'typescript';
import { PROJECT_ROOT, projectPath } from '../../infra/lambda-defaults.js';

export interface SdkCall {
  /** The SDK package, e.g. '@aws-sdk/lib-dynamodb'. */
  readonly sdkPackage: string;
  /** The command class, e.g. 'QueryCommand'. */
  readonly command: string;
  /** The enclosing class (or, outside a class, the file) the command is built in. */
  readonly caller: string;
  /** `file:line` of the `new` expression, relative to the repository root. */
  readonly at: string;
  /** The command's argument names an `IndexName`. */
  readonly onIndex: boolean;
  /** For transactions: the item kinds (Put, Update, Delete, ConditionCheck) built beside it. */
  readonly transactItems: readonly string[];
}

const TRANSACT_ITEM_KINDS = new Set(['Put', 'Update', 'Delete', 'ConditionCheck']);

function sdkPackageOf(fileName: string): string | undefined {
  const match = /node_modules\/(@aws-sdk\/[^/]+)\//.exec(fileName.replaceAll('\\', '/'));
  return match?.[1];
}

function isProjectFile(sourceFile: ts.SourceFile): boolean {
  return !sourceFile.isDeclarationFile && !sourceFile.fileName.includes('/node_modules/');
}

function compilerOptions(): ts.CompilerOptions {
  const configPath = projectPath('tsconfig.json');
  const { config } = ts.readConfigFile(configPath, ts.sys.readFile);
  return ts.parseJsonConfigFileContent(config, ts.sys, dirname(configPath)).options;
}

type Reachable =
  | ts.FunctionLikeDeclaration
  | ts.VariableDeclaration
  | ts.PropertyDeclaration
  | ts.ClassLikeDeclaration
  | ts.SourceFile
  | ts.EnumDeclaration;

/** The SDK calls reachable from each entry file (paths relative to the repository root). */
export function sdkCallsOf(entries: readonly string[]): Map<string, SdkCall[]> {
  const program = ts.createProgram(
    entries.map((entry) => projectPath(entry)),
    compilerOptions(),
  );
  const checker = program.getTypeChecker();
  const result = new Map<string, SdkCall[]>();
  for (const entry of entries) {
    const source = program.getSourceFile(projectPath(entry));
    if (!source) throw new Error(`${entry} is not in the program`);
    result.set(entry, new CallGraph(checker).from(source));
  }
  return result;
}

class CallGraph {
  private readonly visited = new Set<ts.Node>();
  private readonly queue: Reachable[] = [];
  private readonly calls: SdkCall[] = [];
  /** Classes the reached code instantiates (`new C`), for calls through interface members. */
  private readonly instantiated = new Set<ts.ClassLikeDeclaration>();
  /** Member names called through an interface or type literal (no body to follow). */
  private readonly abstractMembers = new Set<string>();

  constructor(private readonly checker: ts.TypeChecker) {}

  from(source: ts.SourceFile): SdkCall[] {
    // The entry's module code, and what it exports (the handler Lambda calls).
    this.enqueue(source);
    for (const statement of source.statements) {
      if (ts.isFunctionDeclaration(statement) && statement.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword))
        this.enqueue(statement);
    }
    for (;;) {
      while (this.queue.length > 0) this.walk(this.queue.pop()!);
      // Calls through interfaces reach the same-named members of every instantiated class.
      const before = this.visited.size;
      for (const cls of this.instantiated) {
        for (const member of cls.members) {
          const name = member.name && ts.isIdentifier(member.name) ? member.name.text : undefined;
          if (
            name &&
            this.abstractMembers.has(name) &&
            (ts.isMethodDeclaration(member) || ts.isPropertyDeclaration(member) || ts.isGetAccessor(member))
          ) {
            this.enqueue(member);
          }
        }
      }
      if (this.queue.length === 0 && this.visited.size === before) break;
    }
    return this.calls.sort((a, b) => a.at.localeCompare(b.at));
  }

  private enqueue(node: Reachable | ts.ClassElement): void {
    if (this.visited.has(node)) return;
    this.visited.add(node);
    this.queue.push(node as Reachable);
  }

  private walk(node: ts.Node): void {
    if (ts.isClassLike(node)) {
      // A class reached by name: its construction (constructor, field initializers, base class), not its methods.
      for (const member of node.members) {
        if (ts.isConstructorDeclaration(member) || (ts.isPropertyDeclaration(member) && member.initializer)) this.visit(member);
      }
      for (const clause of node.heritageClauses ?? []) {
        if (clause.token === ts.SyntaxKind.ExtendsKeyword) for (const type of clause.types) this.visit(type.expression);
      }
      return;
    }
    if (ts.isSourceFile(node)) {
      for (const statement of node.statements) {
        // Module code runs at import; declarations run only when referenced.
        if (
          ts.isFunctionDeclaration(statement) ||
          ts.isClassDeclaration(statement) ||
          ts.isInterfaceDeclaration(statement) ||
          ts.isTypeAliasDeclaration(statement)
        )
          continue;
        if (ts.isImportDeclaration(statement)) {
          // Imported modules' top-level code runs too.
          const imported = this.moduleOf(statement.moduleSpecifier);
          if (imported) this.enqueue(imported);
          continue;
        }
        this.visit(statement);
      }
      return;
    }
    this.visit(node);
  }

  private moduleOf(specifier: ts.Expression): ts.SourceFile | undefined {
    const symbol = this.checker.getSymbolAtLocation(specifier);
    const declaration = symbol?.declarations?.[0];
    return declaration && ts.isSourceFile(declaration) && isProjectFile(declaration) ? declaration : undefined;
  }

  private visit(node: ts.Node): void {
    if (ts.isTypeNode(node) || ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node) || ts.isImportDeclaration(node)) return;
    if (ts.isNewExpression(node)) this.onNew(node);
    if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) this.onReference(node);
    ts.forEachChild(node, (child) => this.visit(child));
  }

  private resolve(node: ts.Node): ts.Symbol | undefined {
    let symbol = this.checker.getSymbolAtLocation(node);
    if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = this.checker.getAliasedSymbol(symbol);
    return symbol;
  }

  private onReference(node: ts.Identifier | ts.PrivateIdentifier): void {
    const symbol = this.resolve(node);
    for (const declaration of symbol?.declarations ?? []) {
      if (!isProjectFile(declaration.getSourceFile())) continue;
      if (ts.isSourceFile(declaration)) continue;
      if (ts.isMethodSignature(declaration) || ts.isPropertySignature(declaration)) {
        const name = declaration.name;
        if (ts.isIdentifier(name)) this.abstractMembers.add(name.text);
        continue;
      }
      if (
        ts.isFunctionDeclaration(declaration) ||
        ts.isMethodDeclaration(declaration) ||
        ts.isGetAccessor(declaration) ||
        ts.isSetAccessor(declaration) ||
        ts.isVariableDeclaration(declaration) ||
        ts.isPropertyDeclaration(declaration) ||
        ts.isClassLike(declaration) ||
        ts.isEnumDeclaration(declaration)
      ) {
        this.enqueue(declaration);
      }
    }
  }

  private onNew(node: ts.NewExpression): void {
    const symbol = this.resolve(node.expression);
    const declaration = symbol?.declarations?.[0];
    if (!declaration) return;
    if (ts.isClassLike(declaration) && isProjectFile(declaration.getSourceFile())) this.instantiated.add(declaration);
    const sdkPackage = sdkPackageOf(declaration.getSourceFile().fileName);
    const command = symbol?.getName() ?? '';
    if (!sdkPackage || !command.endsWith('Command')) return;
    const source = node.getSourceFile();
    const { line } = source.getLineAndCharacterOfPosition(node.getStart());
    const argument = node.arguments?.[0];
    this.calls.push({
      sdkPackage,
      command,
      caller: callerOf(node) ?? relative(PROJECT_ROOT, source.fileName),
      at: `${relative(PROJECT_ROOT, source.fileName)}:${line + 1}`,
      onIndex: argument !== undefined && /\bIndexName\b/.test(argument.getText()),
      transactItems: /^Transact(Write|Get)/.test(command) ? transactItemsBeside(node) : [],
    });
  }
}

function callerOf(node: ts.Node): string | undefined {
  for (let at: ts.Node | undefined = node.parent; at; at = at.parent) {
    if (ts.isClassLike(at)) return at.name?.text;
  }
  return undefined;
}

/** Item kinds (`{ Put: … }`, `{ Delete: … }`) built in the function that builds the transaction. */
function transactItemsBeside(node: ts.Node): string[] {
  let scope: ts.Node = node;
  while (scope.parent && !(ts.isFunctionLike(scope) && !ts.isArrowFunction(scope))) scope = scope.parent;
  const kinds = new Set<string>();
  const find = (n: ts.Node): void => {
    if (
      (ts.isPropertyAssignment(n) || ts.isShorthandPropertyAssignment(n)) &&
      ts.isIdentifier(n.name) &&
      TRANSACT_ITEM_KINDS.has(n.name.text)
    )
      kinds.add(n.name.text);
    ts.forEachChild(n, find);
  };
  find(scope);
  return [...kinds].sort();
}

/** lib-dynamodb's document commands and the DynamoDB operation each one sends. */
const DOCUMENT_COMMANDS: Readonly<Record<string, string>> = {
  GetCommand: 'GetItem',
  PutCommand: 'PutItem',
  UpdateCommand: 'UpdateItem',
  DeleteCommand: 'DeleteItem',
  QueryCommand: 'Query',
  ScanCommand: 'Scan',
  BatchGetCommand: 'BatchGetItem',
  BatchWriteCommand: 'BatchWriteItem',
  TransactGetCommand: 'TransactGetItems',
  TransactWriteCommand: 'TransactWriteItems',
  BatchExecuteStatementCommand: 'BatchExecuteStatement',
  ExecuteStatementCommand: 'ExecuteStatement',
  ExecuteTransactionCommand: 'ExecuteTransaction',
};

const IAM_PREFIX: Readonly<Record<string, string>> = {
  '@aws-sdk/client-dynamodb': 'dynamodb',
  '@aws-sdk/lib-dynamodb': 'dynamodb',
  '@aws-sdk/client-sqs': 'sqs',
  '@aws-sdk/client-eventbridge': 'events',
  '@aws-sdk/client-cloudformation': 'cloudformation',
};

/** The transaction item kinds and the action IAM checks for each. */
const TRANSACT_ITEM_ACTIONS: Readonly<Record<string, string>> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
};

/**
 * The IAM actions a call needs. A transaction is authorized per item (PutItem, UpdateItem,
 * DeleteItem, ConditionCheckItem; TransactGetItems by GetItem); an SQS batch call by its single
 * form (SendMessageBatch by SendMessage).
 */
export function iamActionsOf(sdkPackage: string, command: string, transactItems: readonly string[] = []): string[] {
  const prefix = IAM_PREFIX[sdkPackage];
  if (!prefix) throw new Error(`no IAM prefix known for ${sdkPackage} (${command})`);
  let operation = sdkPackage === '@aws-sdk/lib-dynamodb' ? DOCUMENT_COMMANDS[command] : command.replace(/Command$/, '');
  if (operation === undefined) throw new Error(`unknown document command ${command}`);
  if (prefix === 'dynamodb' && operation === 'TransactWriteItems') {
    if (transactItems.length === 0) throw new Error('a TransactWriteItems call whose items were not found beside it');
    return transactItems.map((kind) => `dynamodb:${TRANSACT_ITEM_ACTIONS[kind]}`);
  }
  if (prefix === 'dynamodb' && operation === 'TransactGetItems') return ['dynamodb:GetItem'];
  if (prefix === 'sqs') operation = operation.replace(/Batch$/, '');
  return [`${prefix}:${operation}`];
}
