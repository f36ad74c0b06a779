# Runs in the sandbox child before any tenant code: defines how one call is made (ABL's calling
# convention), the memory-store helpers, and withdraws Pyodide's bridges to JavaScript from what
# Python can import. The process around it is the boundary; this is a second line.
import ast
import builtins
import json
import keyword
import os
import sys
import traceback

_MEMORY_DEVICE = '/dev/memory-stores'
_MESSAGE_LIMIT = 4000
_BLOCKED = frozenset({
    'js', 'pyodide_js', 'pyodide', '_pyodide', '_pyodide_core', 'micropip', 'pyodide_http',
    '_emscripten_info', 'ctypes', '_ctypes', 'webbrowser',
})


class MemoryStoreError(Exception):
    """A memory-store call the platform refused or could not make."""


class _MemoryStores:
    """`memory.get_content(name)`, `memory.set_content(name, dict)`, `memory.delete_content(name)`."""

    __slots__ = ()

    def get_content(self, name):
        return _memory_call('get', name, None)

    def set_content(self, name, content):
        if not isinstance(content, dict):
            raise TypeError('memory.set_content needs a dict')
        _memory_call('set', name, content)

    def delete_content(self, name):
        return _memory_call('delete', name, None)

    def __repr__(self):
        return '<memory stores>'


def _memory_call(action, name, content):
    if not isinstance(name, str) or not name:
        raise TypeError('a memory store name is a non-empty string')
    try:
        request = json.dumps({'a': action, 'n': name, 'c': content}, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise TypeError(f'memory content is not JSON: {err}') from None
    fd = os.open(_MEMORY_DEVICE, os.O_RDWR)
    try:
        data = (request + '\n').encode('utf-8')
        while data:
            data = data[os.write(fd, data):]
        reply = b''
        while not reply.endswith(b'\n'):
            chunk = os.read(fd, 65536)
            if not chunk:
                raise MemoryStoreError('the memory store did not answer')
            reply += chunk
    finally:
        os.close(fd)
    answer = json.loads(reply)
    if answer.get('ok') is True:
        return answer.get('v')
    raise MemoryStoreError(str(answer.get('e') or 'the memory store call failed'))


class _Refuse:
    """First on sys.meta_path: the modules that reach JavaScript or load packages do not import."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition('.')[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return None


def _withdraw_bridges():
    for name in list(sys.modules):
        if name.partition('.')[0] in _BLOCKED:
            del sys.modules[name]
    # Pyodide's own finders (the one serving `js` and `pyodide_js` among them) go; the standard ones stay.
    sys.meta_path[:] = [_Refuse] + [f for f in sys.meta_path if getattr(f, '__module__', '').startswith(('importlib', '_frozen_importlib'))]
    sys.path_hooks[:] = [h for h in sys.path_hooks if 'pyodide' not in repr(h)]
    sys.path_importer_cache.clear()
    os.environ.clear()
    # The interpreter may come from a memory image every child shares: fresh randomness for each.
    if 'random' in sys.modules:
        sys.modules['random'].seed()


def _describe(err):
    kind = type(err)
    name = kind.__qualname__ if kind.__module__ in ('builtins', '__main__', '__sandbox__') else f'{kind.__module__}.{kind.__qualname__}'
    try:
        text = str(err)
    except BaseException:
        text = ''
    if isinstance(err, SyntaxError) and err.lineno:
        text = f'{err.msg} (line {err.lineno})'
    message = f'{name}: {text}' if text else name
    return message if len(message) <= _MESSAGE_LIMIT else message[:_MESSAGE_LIMIT] + '…'


def _names(params):
    return [n for n in params if isinstance(n, str) and n.isidentifier() and not keyword.iskeyword(n) and n != 'params']


def _binds(tree, name):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


def _invoke(code, entrypoint, params):
    tree = ast.parse(code, filename='<tool>', mode='exec')
    scope = {'__name__': '__main__', '__builtins__': builtins, 'memory': _MemoryStores()}
    if _binds(tree, 'main') or entrypoint:
        exec(compile(tree, '<tool>', 'exec', dont_inherit=True), scope)
        target = scope.get('main') if callable(scope.get('main')) else scope.get(entrypoint) if entrypoint else None
        if not callable(target):
            raise NameError(f"entrypoint '{entrypoint}' is not defined" if entrypoint else "'main' is not a function")
        return target(params)
    # Neither main nor an entrypoint: the code is the body of a function whose locals are the params.
    names = _names(params)
    body = ast.FunctionDef(
        name='__tool__',
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg='params')] + [ast.arg(arg=n) for n in names],
                           vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=tree.body or [ast.Pass()], decorator_list=[], returns=None, type_params=[],
    )
    module = ast.Module(body=[body], type_ignores=[])
    ast.copy_location(body, tree.body[0] if tree.body else body)
    ast.fix_missing_locations(module)
    exec(compile(module, '<tool>', 'exec', dont_inherit=True), scope)
    return scope['__tool__'](params, *[params[n] for n in names])


def _sandbox_run(call_text):
    """One call: 'o' + the result's JSON, or 'e' + the message the agent sees."""
    call = json.loads(call_text)
    try:
        value = _invoke(call['code'], call.get('entrypoint'), call['params'])
        if hasattr(value, '__await__'):
            raise TypeError('main must not be async')
    except BaseException as err:
        try:
            frames = traceback.format_exception(err)
            sys.stderr.write(''.join(f for f in frames if '<sandbox>' not in f))
            sys.stderr.flush()
        except BaseException:
            pass
        return 'e' + _describe(err)
    try:
        return 'o' + json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(',', ':'))
    except (TypeError, ValueError, RecursionError) as err:
        return 'e' + f'the result is not JSON: {_describe(err)}'


_withdraw_bridges()
del _withdraw_bridges
