"""Every primitive column of an Arrow array by its Parquet path: lists flattened (path
`<list>.list.element`), structs split into their fields, an extension type read as its
storage. Shared by the scripts that read our files' values with pyarrow."""
import pyarrow as pa
import pyarrow.compute as pc


def leaves(name, array, out):
    kind = array.type
    if isinstance(kind, pa.BaseExtensionType):
        array = array.storage
        kind = array.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        leaves(f"{name}.list.element", pc.list_flatten(array), out)
    elif pa.types.is_struct(kind):
        for i in range(kind.num_fields):
            leaves(f"{name}.{kind.field(i).name}", pc.struct_field(array, [i]), out)
    else:
        out[name] = array
