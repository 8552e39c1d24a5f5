"""A fourteenth round of ICON stencils (icon4py's field operators) in icon4py's
own spelling, beside ``test_icon_stencils_ported*.py``.

First the edge geometry of the icosahedral (spherical) grid: the positions of
vertices and edge points on the unit sphere (``sin``/``cos`` of latitude and
longitude), the normalized edge tangent between the two vertices of an edge
(``E2V``) turned by the edge orientation, the edge normal as the cross
product of the edge point and the tangent, both together as a tuple of six,
the zonal and meridional components of an edge vector at the four vertices
of the ``E2C2V`` diamond (a tuple of eight) and at the two cells of the edge
(``E2C``, a tuple of four), the arc length of an edge, the arc distance
between the far vertices of the diamond and between the two cell centres
(``arccos`` of a dot product).  One program writes them all on runtime edge
bounds; then the same operators are called directly: a tuple of eight
domains made from unpacked bindings and a conditional tuple, bounds as NumPy
``int32`` values, domains over vertices.
Then the kinetic energy at cells and the contravariant correction on cell
half levels called directly on one domain whose outputs differ in length (a
full-level and a half-level field, as icon4py's program writes them) and on a
tuple of domains, the corrected contravariant wind on every half level, and
the vertical CFL check with its clipping: a ``bool`` and a full-level output
beside a half-level one, on one domain and without ``domain=`` (GT4Py's
intersection of the outputs' domains).
Last the turbulence set-up on cell half levels: a full-level field
interpolated to half levels with extrapolated top and bottom half levels
(``concat_where`` on ``KDim == 0`` and a runtime ``KDim == nlev``, shifts
spelled ``KDim + 1``) into an out= a level longer than its input, and the
constant eddy viscosity and diffusivity with their boundary half levels
copied, from a program and called directly with and without ``domain=``.
Each group is one program (or a few direct calls), interpreted and compiled,
compared with NumPy written from the formulas."""

from __future__ import annotations

import types
from typing import TypeVar

import numpy as np
import pytest

from icon_numpy import check, inside
from tensorir_dace import frontend as gtx
from tensorir_dace.frontend import (
    Dimension,
    DimensionKind,
    Dims,
    Field,
    FieldOffset,
    abs,
    arccos,
    astype,
    broadcast,
    concat_where,
    cos,
    neighbor_sum,
    sin,
    sqrt,
    where,
)

T = TypeVar("T")
CellDim = Dimension("Cell")
EdgeDim = Dimension("Edge")
VertexDim = Dimension("Vertex")
KDim = Dimension("K", kind=DimensionKind.VERTICAL)
C2EDim = Dimension("C2E", DimensionKind.LOCAL)
E2CDim = Dimension("E2C", DimensionKind.LOCAL)
E2VDim = Dimension("E2V", DimensionKind.LOCAL)
E2C2VDim = Dimension("E2C2V", DimensionKind.LOCAL)
CEDim = Dimension("CE")

dims = types.ModuleType("icon_dims")
dims.CellDim, dims.EdgeDim, dims.VertexDim, dims.KDim = CellDim, EdgeDim, VertexDim, KDim
dims.C2EDim, dims.E2CDim, dims.E2VDim, dims.E2C2VDim = C2EDim, E2CDim, E2VDim, E2C2VDim
dims.CEDim = CEDim
E2C = FieldOffset("E2C", source=CellDim, target=(EdgeDim, E2CDim))
E2V = FieldOffset("E2V", source=VertexDim, target=(EdgeDim, E2VDim))
E2C2V = FieldOffset("E2C2V", source=VertexDim, target=(EdgeDim, E2C2VDim))
C2E = FieldOffset("C2E", source=EdgeDim, target=(CellDim, C2EDim))
C2CE = FieldOffset("C2CE", source=CEDim, target=(CellDim, C2EDim))
Koff = FieldOffset("Koff", source=KDim, target=(KDim,))

fa = types.ModuleType("icon_field_aliases")
fa.CellField = Field[Dims[CellDim], T]
fa.EdgeField = Field[Dims[EdgeDim], T]
fa.VertexField = Field[Dims[VertexDim], T]
fa.KField = Field[Dims[KDim], T]
fa.CellKField = Field[Dims[CellDim, KDim], T]
fa.EdgeKField = Field[Dims[EdgeDim, KDim], T]

ta = types.ModuleType("icon_type_alias")
ta.wpfloat, ta.vpfloat = gtx.float64, gtx.float32
wpfloat, vpfloat = ta.wpfloat, ta.vpfloat

BACKENDS = ["interpreter", "compiled"]
NC, NE, NV, NLEV = 7, 11, 8, 9
NH = NLEV + 1
RNG = np.random.default_rng(14001)
_TABLE_RNG = np.random.default_rng(14002)


def _distinct(n_rows, n_from, k):
    return np.array([_TABLE_RNG.choice(n_from, k, replace=False) for _ in range(n_rows)])


# icon4py's tables: an edge's two vertices and the four of its diamond are
# distinct, as are its two cells and the three edges of a cell
TABLES = {"E2V": _distinct(NE, NV, 2), "E2C2V": _distinct(NE, NV, 4),
          "E2C": _distinct(NE, NC, 2), "C2E": _distinct(NC, NE, 3), "C2CE": None,
          "Koff": KDim}
TABLES["E2C2V"][:, :2] = TABLES["E2V"]      # the diamond starts with the edge's own vertices
for _row in TABLES["E2C2V"]:
    while len(set(_row)) < 4:
        _row[2:] = _TABLE_RNG.choice(NV, 2, replace=False)


@pytest.fixture(autouse=True)
def _same_data_in_any_order():
    """Each test draws its data from the same seed, whichever tests ran before it."""
    RNG.bit_generator.state = np.random.default_rng(14003).bit_generator.state


def f64(*shape):
    return RNG.random(shape)


# ================================================================== spherical edge geometry
#
# icon4py's geometry of the icosahedral grid: cartesian positions on the unit
# sphere, the edge tangent (from the vertices of ``E2V``) and normal (the edge
# point crossed with the tangent), their zonal and meridional components at the
# vertices of the ``E2C2V`` diamond and at the cells of ``E2C``, and the arc
# lengths of the primal edge, the far diagonal of the diamond and the dual edge.


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def geographical_to_cartesian_on_edges(
    lat: fa.EdgeField[gtx.float64], lon: fa.EdgeField[gtx.float64]
) -> tuple[fa.EdgeField[gtx.float64], fa.EdgeField[gtx.float64], fa.EdgeField[gtx.float64]]:
    x = cos(lat) * cos(lon)
    y = cos(lat) * sin(lon)
    z = sin(lat)
    return x, y, z


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def geographical_to_cartesian_on_vertices(
    lat: fa.VertexField[gtx.float64], lon: fa.VertexField[gtx.float64]
) -> tuple[fa.VertexField[gtx.float64], fa.VertexField[gtx.float64],
           fa.VertexField[gtx.float64]]:
    x = cos(lat) * cos(lon)
    y = cos(lat) * sin(lon)
    z = sin(lat)
    return x, y, z


@gtx.field_operator
def dot_product_on_edges(
    x1: fa.EdgeField[wpfloat], x2: fa.EdgeField[wpfloat],
    y1: fa.EdgeField[wpfloat], y2: fa.EdgeField[wpfloat],
    z1: fa.EdgeField[wpfloat], z2: fa.EdgeField[wpfloat],
) -> fa.EdgeField[wpfloat]:
    return x1 * x2 + y1 * y2 + z1 * z2


@gtx.field_operator
def cross_product_on_edges(
    x1: fa.EdgeField[wpfloat], x2: fa.EdgeField[wpfloat],
    y1: fa.EdgeField[wpfloat], y2: fa.EdgeField[wpfloat],
    z1: fa.EdgeField[wpfloat], z2: fa.EdgeField[wpfloat],
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat]]:
    x = y1 * z2 - z1 * y2
    y = z1 * x2 - x1 * z2
    z = x1 * y2 - y1 * x2
    return x, y, z


@gtx.field_operator
def norm2_on_edges(
    x: fa.EdgeField[wpfloat], y: fa.EdgeField[wpfloat], z: fa.EdgeField[wpfloat]
) -> fa.EdgeField[wpfloat]:
    return sqrt(dot_product_on_edges(x, x, y, y, z, z))


@gtx.field_operator
def normalize_cartesian_vector_on_edges(
    v_x: fa.EdgeField[wpfloat], v_y: fa.EdgeField[wpfloat], v_z: fa.EdgeField[wpfloat]
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat]]:
    norm = norm2_on_edges(v_x, v_y, v_z)
    return v_x / norm, v_y / norm, v_z / norm


@gtx.field_operator
def zonal_and_meridional_components_on_edges(
    lat: fa.EdgeField[gtx.float64], lon: fa.EdgeField[gtx.float64],
    x: fa.EdgeField[gtx.float64], y: fa.EdgeField[gtx.float64], z: fa.EdgeField[gtx.float64],
) -> tuple[fa.EdgeField[gtx.float64], fa.EdgeField[gtx.float64]]:
    cos_lat = cos(lat)
    sin_lat = sin(lat)
    cos_lon = cos(lon)
    sin_lon = sin(lon)
    u = cos_lon * y - sin_lon * x
    v = cos_lat * z - sin_lat * (cos_lon * x + sin_lon * y)
    norm = sqrt(u * u + v * v)
    return u / norm, v / norm


@gtx.field_operator
def arc_length_on_edges(
    x0: fa.EdgeField[wpfloat], x1: fa.EdgeField[wpfloat],
    y0: fa.EdgeField[wpfloat], y1: fa.EdgeField[wpfloat],
    z0: fa.EdgeField[wpfloat], z1: fa.EdgeField[wpfloat],
    radius: wpfloat,
) -> fa.EdgeField[wpfloat]:
    return radius * arccos(dot_product_on_edges(x0, x1, y0, y1, z0, z1))


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def cartesian_coordinates_of_edge_tangent(
    vertex_lat: fa.VertexField[wpfloat],
    vertex_lon: fa.VertexField[wpfloat],
    edge_orientation: fa.EdgeField[wpfloat],
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat]]:
    vertex_x, vertex_y, vertex_z = geographical_to_cartesian_on_vertices(vertex_lat, vertex_lon)
    x = edge_orientation * (vertex_x(E2V[1]) - vertex_x(E2V[0]))
    y = edge_orientation * (vertex_y(E2V[1]) - vertex_y(E2V[0]))
    z = edge_orientation * (vertex_z(E2V[1]) - vertex_z(E2V[0]))
    return normalize_cartesian_vector_on_edges(x, y, z)


@gtx.field_operator
def cartesian_coordinates_of_edge_normal(
    edge_lat: fa.EdgeField[wpfloat],
    edge_lon: fa.EdgeField[wpfloat],
    edge_tangent_x: fa.EdgeField[wpfloat],
    edge_tangent_y: fa.EdgeField[wpfloat],
    edge_tangent_z: fa.EdgeField[wpfloat],
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat]]:
    edge_center_x, edge_center_y, edge_center_z = geographical_to_cartesian_on_edges(
        edge_lat, edge_lon
    )
    x, y, z = cross_product_on_edges(
        edge_center_x, edge_tangent_x, edge_center_y, edge_tangent_y, edge_center_z,
        edge_tangent_z
    )
    return normalize_cartesian_vector_on_edges(x, y, z)


@gtx.field_operator
def cartesian_coordinates_edge_tangent_and_normal(
    vertex_lat: fa.VertexField[wpfloat],
    vertex_lon: fa.VertexField[wpfloat],
    edge_lat: fa.EdgeField[wpfloat],
    edge_lon: fa.EdgeField[wpfloat],
    edge_orientation: fa.EdgeField[wpfloat],
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat],
           fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat]]:
    tangent_x, tangent_y, tangent_z = cartesian_coordinates_of_edge_tangent(
        vertex_lat, vertex_lon, edge_orientation
    )
    normal_x, normal_y, normal_z = cartesian_coordinates_of_edge_normal(
        edge_lat, edge_lon, tangent_x, tangent_y, tangent_z,
    )
    return tangent_x, tangent_y, tangent_z, normal_x, normal_y, normal_z


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def zonal_and_meridional_component_of_edge_field_at_vertex(
    vertex_lat: fa.VertexField[wpfloat],
    vertex_lon: fa.VertexField[wpfloat],
    x: fa.EdgeField[wpfloat],
    y: fa.EdgeField[wpfloat],
    z: fa.EdgeField[wpfloat],
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat],
           fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat],
           fa.EdgeField[wpfloat], fa.EdgeField[wpfloat]]:
    vertex_lat_0 = vertex_lat(E2C2V[0])
    vertex_lon_0 = vertex_lon(E2C2V[0])
    u_vertex_0, v_vertex_0 = zonal_and_meridional_components_on_edges(
        vertex_lat_0, vertex_lon_0, x, y, z
    )
    vertex_lat_1 = vertex_lat(E2C2V[1])
    vertex_lon_1 = vertex_lon(E2C2V[1])
    u_vertex_1, v_vertex_1 = zonal_and_meridional_components_on_edges(
        vertex_lat_1, vertex_lon_1, x, y, z
    )
    vertex_lat_2 = vertex_lat(E2C2V[2])
    vertex_lon_2 = vertex_lon(E2C2V[2])
    u_vertex_2, v_vertex_2 = zonal_and_meridional_components_on_edges(
        vertex_lat_2, vertex_lon_2, x, y, z
    )
    vertex_lat_3 = vertex_lat(E2C2V[3])
    vertex_lon_3 = vertex_lon(E2C2V[3])
    u_vertex_3, v_vertex_3 = zonal_and_meridional_components_on_edges(
        vertex_lat_3, vertex_lon_3, x, y, z
    )
    return (u_vertex_0, v_vertex_0, u_vertex_1, v_vertex_1,
            u_vertex_2, v_vertex_2, u_vertex_3, v_vertex_3)


@gtx.field_operator(grid_type=gtx.GridType.UNSTRUCTURED)
def zonal_and_meridional_component_of_edge_field_at_cell_center(
    cell_lat: fa.CellField[wpfloat],
    cell_lon: fa.CellField[wpfloat],
    x: fa.EdgeField[wpfloat],
    y: fa.EdgeField[wpfloat],
    z: fa.EdgeField[wpfloat],
) -> tuple[fa.EdgeField[wpfloat], fa.EdgeField[wpfloat], fa.EdgeField[wpfloat],
           fa.EdgeField[wpfloat]]:
    cell_lat_0 = cell_lat(E2C[0])
    cell_lon_0 = cell_lon(E2C[0])
    u_cell_0, v_cell_0 = zonal_and_meridional_components_on_edges(cell_lat_0, cell_lon_0,
                                                                  x, y, z)
    cell_lat_1 = cell_lat(E2C[1])
    cell_lon_1 = cell_lon(E2C[1])
    u_cell_1, v_cell_1 = zonal_and_meridional_components_on_edges(cell_lat_1, cell_lon_1,
                                                                  x, y, z)
    return (u_cell_0, v_cell_0, u_cell_1, v_cell_1)


@gtx.field_operator
def cell_center_arc_distance(
    lat_neighbor_0: fa.EdgeField[wpfloat],
    lon_neighbor_0: fa.EdgeField[wpfloat],
    lat_neighbor_1: fa.EdgeField[wpfloat],
    lon_neighbor_1: fa.EdgeField[wpfloat],
    radius: wpfloat,
) -> fa.EdgeField[wpfloat]:
    x0, y0, z0 = geographical_to_cartesian_on_edges(lat_neighbor_0, lon_neighbor_0)
    x1, y1, z1 = geographical_to_cartesian_on_edges(lat_neighbor_1, lon_neighbor_1)
    arc = arc_length_on_edges(x0, x1, y0, y1, z0, z1, radius)
    return arc


@gtx.field_operator
def arc_distance_of_far_edges_in_diamond(
    vertex_lat: fa.VertexField[wpfloat],
    vertex_lon: fa.VertexField[wpfloat],
    radius: wpfloat,
) -> fa.EdgeField[wpfloat]:
    x, y, z = geographical_to_cartesian_on_vertices(vertex_lat, vertex_lon)
    return arc_length_on_edges(
        x(E2C2V[2]), x(E2C2V[3]), y(E2C2V[2]), y(E2C2V[3]), z(E2C2V[2]), z(E2C2V[3]), radius,
    )


@gtx.field_operator
def edge_length(
    vertex_lat: fa.VertexField[wpfloat],
    vertex_lon: fa.VertexField[wpfloat],
    radius: wpfloat,
) -> fa.EdgeField[wpfloat]:
    x, y, z = geographical_to_cartesian_on_vertices(vertex_lat, vertex_lon)
    x0 = x(E2V[0])
    x1 = x(E2V[1])
    y0 = y(E2V[0])
    y1 = y(E2V[1])
    z0 = z(E2V[0])
    z1 = z(E2V[1])
    length = arc_length_on_edges(x0, x1, y0, y1, z0, z1, radius)
    return length


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def compute_spherical_edge_geometry(
    vertex_lat: fa.VertexField[wpfloat],
    vertex_lon: fa.VertexField[wpfloat],
    edge_lat: fa.EdgeField[wpfloat],
    edge_lon: fa.EdgeField[wpfloat],
    cell_lat: fa.CellField[wpfloat],
    cell_lon: fa.CellField[wpfloat],
    edge_orientation: fa.EdgeField[wpfloat],
    edge_neighbor_0_lat: fa.EdgeField[wpfloat],
    edge_neighbor_0_lon: fa.EdgeField[wpfloat],
    edge_neighbor_1_lat: fa.EdgeField[wpfloat],
    edge_neighbor_1_lon: fa.EdgeField[wpfloat],
    tangent_x: fa.EdgeField[wpfloat],
    tangent_y: fa.EdgeField[wpfloat],
    tangent_z: fa.EdgeField[wpfloat],
    normal_x: fa.EdgeField[wpfloat],
    normal_y: fa.EdgeField[wpfloat],
    normal_z: fa.EdgeField[wpfloat],
    u_cell_1: fa.EdgeField[wpfloat],
    v_cell_1: fa.EdgeField[wpfloat],
    u_cell_2: fa.EdgeField[wpfloat],
    v_cell_2: fa.EdgeField[wpfloat],
    length: fa.EdgeField[wpfloat],
    far_vertex_distance: fa.EdgeField[wpfloat],
    dual_edge_length: fa.EdgeField[wpfloat],
    radius: wpfloat,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    lateral_start: gtx.int32,
):
    cartesian_coordinates_edge_tangent_and_normal(
        vertex_lat, vertex_lon, edge_lat, edge_lon, edge_orientation,
        out=(tangent_x, tangent_y, tangent_z, normal_x, normal_y, normal_z),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end)},
    )
    zonal_and_meridional_component_of_edge_field_at_cell_center(
        cell_lat, cell_lon, normal_x, normal_y, normal_z,
        out=(u_cell_1, v_cell_1, u_cell_2, v_cell_2),
        domain={dims.EdgeDim: (horizontal_start, horizontal_end)},
    )
    edge_length(vertex_lat, vertex_lon, radius, out=length,
                domain={dims.EdgeDim: (horizontal_start, horizontal_end)})
    arc_distance_of_far_edges_in_diamond(
        vertex_lat, vertex_lon, radius, out=far_vertex_distance,
        domain={dims.EdgeDim: (lateral_start, horizontal_end)},
    )
    cell_center_arc_distance(
        edge_neighbor_0_lat, edge_neighbor_0_lon, edge_neighbor_1_lat, edge_neighbor_1_lon,
        radius, out=dual_edge_length,
        domain={dims.EdgeDim: (horizontal_start, horizontal_end)},
    )


def unit(lat, lon):
    return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])


def normalized(v):
    return v / np.linalg.norm(v, axis=0)


def zonal_meridional(lat, lon, vec):
    x, y, z = vec
    u = np.cos(lon) * y - np.sin(lon) * x
    v = np.cos(lat) * z - np.sin(lat) * (np.cos(lon) * x + np.sin(lon) * y)
    norm = np.sqrt(u * u + v * v)
    return u / norm, v / norm


def geometry_inputs():
    a = dict(vertex_lat=RNG.uniform(-1.4, 1.4, NV), vertex_lon=RNG.uniform(-3.0, 3.0, NV),
             edge_lat=RNG.uniform(-1.4, 1.4, NE), edge_lon=RNG.uniform(-3.0, 3.0, NE),
             cell_lat=RNG.uniform(-1.4, 1.4, NC), cell_lon=RNG.uniform(-3.0, 3.0, NC),
             edge_orientation=RNG.choice([-1.0, 1.0], NE))
    e2c = TABLES["E2C"]
    a.update(edge_neighbor_0_lat=a["cell_lat"][e2c[:, 0]],
             edge_neighbor_0_lon=a["cell_lon"][e2c[:, 0]],
             edge_neighbor_1_lat=a["cell_lat"][e2c[:, 1]],
             edge_neighbor_1_lon=a["cell_lon"][e2c[:, 1]])
    return a


def geometry_numpy(a, radius):
    """Every output of the spherical edge geometry on all edges."""
    e2v, e2c2v, e2c = TABLES["E2V"], TABLES["E2C2V"], TABLES["E2C"]
    pv = unit(a["vertex_lat"], a["vertex_lon"])
    tangent = normalized(a["edge_orientation"] * (pv[:, e2v[:, 1]] - pv[:, e2v[:, 0]]))
    centre = unit(a["edge_lat"], a["edge_lon"])
    normal = normalized(np.cross(centre.T, tangent.T).T)
    want = dict(zip(("tangent_x", "tangent_y", "tangent_z", "normal_x", "normal_y",
                     "normal_z"), (*tangent, *normal)))
    for k in range(2):
        c = e2c[:, k]
        want[f"u_cell_{k + 1}"], want[f"v_cell_{k + 1}"] = zonal_meridional(
            a["cell_lat"][c], a["cell_lon"][c], normal)
    for k in range(4):
        v = e2c2v[:, k]
        want[f"u_vertex_{k}"], want[f"v_vertex_{k}"] = zonal_meridional(
            a["vertex_lat"][v], a["vertex_lon"][v], normal)

    def arc(p, q):
        return radius * np.arccos(np.sum(p * q, axis=0))
    want["length"] = arc(pv[:, e2v[:, 0]], pv[:, e2v[:, 1]])
    want["far_vertex_distance"] = arc(pv[:, e2c2v[:, 2]], pv[:, e2c2v[:, 3]])
    pc = unit(a["cell_lat"], a["cell_lon"])
    want["dual_edge_length"] = arc(pc[:, e2c[:, 0]], pc[:, e2c[:, 1]])
    return want


GEOMETRY_OUTPUTS = ("tangent_x", "tangent_y", "tangent_z", "normal_x", "normal_y", "normal_z",
                    "u_cell_1", "v_cell_1", "u_cell_2", "v_cell_2", "length",
                    "far_vertex_distance", "dual_edge_length")


@pytest.mark.parametrize("bounds", [(0, NE, 0), (2, NE - 1, 4)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_spherical_edge_geometry(backend, bounds):
    hs, he, ls = bounds
    radius = 6.371229e6
    a = geometry_inputs()
    base = {n: f64(NE) for n in GEOMETRY_OUTPUTS}
    got = {n: v.copy() for n, v in base.items()}
    compute_spherical_edge_geometry(**a, **got, radius=radius, horizontal_start=hs,
                                    horizontal_end=he, lateral_start=ls,
                                    offset_provider=TABLES, backend=backend)
    full = geometry_numpy(a, radius)
    want = {n: inside(full[n], base[n], ls if n == "far_vertex_distance" else hs, he)
            for n in GEOMETRY_OUTPUTS}
    check(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_calls_of_the_spherical_edge_geometry(backend):
    # icon4py's operators called directly: a tuple of eight domains put
    # together from unpacked bindings and a conditional tuple, NumPy int32
    # bounds, domains over vertices, and the arc lengths on their own
    i32 = np.int32
    radius = 1.0
    a = geometry_inputs()
    full = geometry_numpy(a, radius)
    tx, ty, tz = full["tangent_x"], full["tangent_y"], full["tangent_z"]

    interior = {dims.EdgeDim: (i32(1), i32(NE - 1))}
    halo = {dims.EdgeDim: (i32(3), i32(NE))}
    first, second = interior, halo
    pair = (first, second) if NE > 4 else (second, first)
    near, far = pair
    names = [f"{c}_vertex_{k}" for k in range(4) for c in "uv"]
    base = {n: f64(NE) for n in names}
    got = {n: v.copy() for n, v in base.items()}
    zonal_and_meridional_component_of_edge_field_at_vertex(
        a["vertex_lat"], a["vertex_lon"], full["normal_x"], full["normal_y"], full["normal_z"],
        out=tuple(got[n] for n in names),
        domain=(near, near, *pair, far, far, (first, second)[0], second),
        offset_provider=TABLES, backend=backend)
    spans = [interior, interior, interior, halo, halo, halo, interior, halo]
    want = {n: inside(full[n], base[n], *span[dims.EdgeDim]) for n, span in zip(names, spans)}
    check(got, want, rtol=1e-10, atol=1e-12)

    # the normal from the tangent on one domain
    nx, ny, nz = f64(NE), f64(NE), f64(NE)
    n0 = (nx.copy(), ny.copy(), nz.copy())
    cartesian_coordinates_of_edge_normal(
        a["edge_lat"], a["edge_lon"], tx, ty, tz, out=(nx, ny, nz),
        domain={dims.EdgeDim: (i32(2), i32(NE - 2))}, offset_provider={}, backend=backend)
    check({"x": nx, "y": ny, "z": nz},
          {"x": inside(full["normal_x"], n0[0], 2, NE - 2),
           "y": inside(full["normal_y"], n0[1], 2, NE - 2),
           "z": inside(full["normal_z"], n0[2], 2, NE - 2)}, rtol=1e-10, atol=1e-12)

    # positions of the vertices, written on a domain over vertices
    px, py, pz = f64(NV), f64(NV), f64(NV)
    p0 = (px.copy(), py.copy(), pz.copy())
    geographical_to_cartesian_on_vertices(
        a["vertex_lat"], a["vertex_lon"], out=(px, py, pz),
        domain={dims.VertexDim: (1, i32(NV - 1))}, offset_provider={}, backend=backend)
    pv = unit(a["vertex_lat"], a["vertex_lon"])
    check({"x": px, "y": py, "z": pz},
          {"x": inside(pv[0], p0[0], 1, NV - 1), "y": inside(pv[1], p0[1], 1, NV - 1),
           "z": inside(pv[2], p0[2], 1, NV - 1)}, rtol=1e-12, atol=1e-15)

    length, far_distance = f64(NE), f64(NE)
    l0, f0 = length.copy(), far_distance.copy()
    edge_length(a["vertex_lat"], a["vertex_lon"], radius, out=length,
                domain={dims.EdgeDim: (i32(0), i32(NE - 3))}, offset_provider=TABLES,
                backend=backend)
    arc_distance_of_far_edges_in_diamond(a["vertex_lat"], a["vertex_lon"], radius,
                                         out=far_distance, offset_provider=TABLES,
                                         backend=backend)
    check({"length": length, "far": far_distance},
          {"length": inside(full["length"], l0, 0, NE - 3),
           "far": inside(full["far_vertex_distance"], f0, 0, NE)}, rtol=1e-10, atol=1e-12)


# ============================================================ cell diagnostics, called directly
#
# icon4py's kinetic energy at cells and contravariant correction on cell half
# levels (``where`` on an ``int32`` level field, ``broadcast`` of a vpfloat
# zero, the half-level interpolation through ``Koff[-1]``), the corrected
# contravariant vertical wind on half levels, and the vertical CFL check with
# its clipping (``astype`` of a tuple, a ``bool`` output): called directly as
# icon4py's programs call them, on one domain for a full-level and a
# half-level output, on a tuple of domains put together from bindings, with
# Python and NumPy integer bounds.


@gtx.field_operator
def _interpolate_to_cell_center(
    interpolant: fa.EdgeKField[vpfloat], e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
) -> fa.CellKField[vpfloat]:
    interpolant_wp = astype(interpolant, wpfloat)
    interpolation_wp = neighbor_sum(e_bln_c_s(C2CE) * interpolant_wp(C2E), axis=dims.C2EDim)
    return astype(interpolation_wp, vpfloat)


@gtx.field_operator
def _interpolate_to_half_levels_vp(
    wgtfac_c: fa.CellKField[vpfloat], interpolant: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    interpolation_to_half_levels_vp = wgtfac_c * interpolant + (
        vpfloat("1.0") - wgtfac_c
    ) * interpolant(Koff[-1])
    return interpolation_to_half_levels_vp


@gtx.field_operator
def _correct_contravariant_vertical_velocity(
    z_w_con_c: fa.CellKField[vpfloat], w_concorr_c: fa.CellKField[vpfloat],
) -> fa.CellKField[vpfloat]:
    return z_w_con_c - w_concorr_c


@gtx.field_operator
def _compute_horizontal_kinetic_energy_and_khalf_contravariant_correction(
    horizontal_kinetic_energy_at_edge: fa.EdgeKField[vpfloat],
    e_bln_c_s: gtx.Field[gtx.Dims[dims.CEDim], wpfloat],
    contravariant_correction_at_edge: fa.EdgeKField[vpfloat],
    wgtfac_c: fa.CellKField[vpfloat],
    khalf_contravariant_correction_at_cell: fa.CellKField[vpfloat],
    horizontal_kinetic_energy_at_cell: fa.CellKField[vpfloat],
    k: fa.KField[gtx.int32],
    nflatlev: gtx.int32,
) -> tuple[fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    horizontal_kinetic_energy_at_cell = _interpolate_to_cell_center(
        horizontal_kinetic_energy_at_edge, e_bln_c_s
    )
    contravariant_correction_at_cell = where(
        k >= nflatlev,
        _interpolate_to_cell_center(contravariant_correction_at_edge, e_bln_c_s),
        broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim)),
    )
    khalf_contravariant_correction_at_cell = where(
        nflatlev + 1 <= k,
        _interpolate_to_half_levels_vp(
            wgtfac_c=wgtfac_c, interpolant=contravariant_correction_at_cell
        ),
        khalf_contravariant_correction_at_cell,
    )
    return horizontal_kinetic_energy_at_cell, khalf_contravariant_correction_at_cell


@gtx.field_operator
def _compute_khalf_contravariant_corrected_w(
    w: fa.CellKField[wpfloat],
    khalf_contravariant_correction_at_cell: fa.CellKField[vpfloat],
    k: fa.KField[gtx.int32],
    nflatlev: gtx.int32,
    nlev: gtx.int32,
) -> fa.CellKField[vpfloat]:
    khalf_contravariant_corrected_w_at_cell = where(
        k < nlev, astype(w, vpfloat), broadcast(vpfloat("0.0"), (dims.CellDim, dims.KDim))
    )
    khalf_contravariant_corrected_w_at_cell = where(
        nflatlev + 1 <= k < nlev,
        _correct_contravariant_vertical_velocity(
            khalf_contravariant_corrected_w_at_cell, khalf_contravariant_correction_at_cell
        ),
        khalf_contravariant_corrected_w_at_cell,
    )
    khalf_contravariant_corrected_w_at_cell = where(
        k == nlev, 0.0, khalf_contravariant_corrected_w_at_cell
    )
    return khalf_contravariant_corrected_w_at_cell


@gtx.field_operator
def _compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
    ddqz_z_half: fa.CellKField[vpfloat],
    z_w_con_c: fa.CellKField[vpfloat],
    cfl_w_limit: vpfloat,
    dtime: wpfloat,
) -> tuple[fa.CellKField[bool], fa.CellKField[vpfloat], fa.CellKField[vpfloat]]:
    z_w_con_c_wp, ddqz_z_half_wp = astype((z_w_con_c, ddqz_z_half), wpfloat)
    cfl_clipping = where(
        abs(z_w_con_c) > cfl_w_limit * ddqz_z_half,
        broadcast(True, (dims.CellDim, dims.KDim)),
        False,
    )
    vcfl = where(cfl_clipping, z_w_con_c_wp * dtime / ddqz_z_half_wp, wpfloat("0.0"))
    vcfl_vp = astype(vcfl, vpfloat)
    z_w_con_c_wp = where(
        cfl_clipping & (vcfl_vp < -vpfloat("0.85")),
        astype(-vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime,
        z_w_con_c_wp,
    )
    z_w_con_c_wp = where(
        cfl_clipping & (vcfl_vp > vpfloat("0.85")),
        astype(vpfloat("0.85") * ddqz_z_half, wpfloat) / dtime,
        z_w_con_c_wp,
    )
    return cfl_clipping, vcfl_vp, astype(z_w_con_c_wp, vpfloat)


def cell_diagnostics_inputs():
    f32 = np.float32
    return dict(
        horizontal_kinetic_energy_at_edge=RNG.random((NE, NLEV)).astype(f32),
        e_bln_c_s=RNG.uniform(0.2, 0.5, NC * 3),
        contravariant_correction_at_edge=RNG.standard_normal((NE, NLEV)).astype(f32),
        wgtfac_c=RNG.uniform(0.3, 0.7, (NC, NH)).astype(f32),
        khalf_contravariant_correction_at_cell=RNG.standard_normal((NC, NH)).astype(f32),
        horizontal_kinetic_energy_at_cell=RNG.random((NC, NLEV)).astype(f32),
        k=np.arange(NH, dtype=np.int32))


def cell_diagnostics_numpy(a, nflatlev):
    """Kinetic energy (full levels) and the correction (half levels) on every
    level they are defined on (``khalf`` from level 1)."""
    c2e = TABLES["C2E"]
    w = a["e_bln_c_s"].reshape(NC, 3)

    def to_cells(x):
        return np.einsum("cj,cjk->ck", w, x.astype(np.float64)[c2e]).astype(np.float32)
    ekin = to_cells(a["horizontal_kinetic_energy_at_edge"])
    k = np.arange(NLEV)
    corr = np.where(k >= nflatlev, to_cells(a["contravariant_correction_at_edge"]), 0.0)
    corr = corr.astype(np.float32)
    g = a["wgtfac_c"][:, :NLEV]
    half = np.full((NC, NH), np.nan, np.float32)
    half[:, 1:NLEV] = (g * corr + (1 - g) * np.roll(corr, 1, axis=1))[:, 1:NLEV]
    khalf = np.where(nflatlev + 1 <= np.arange(NH), half,
                     a["khalf_contravariant_correction_at_cell"])
    return ekin, khalf


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_calls_of_cell_diagnostics_on_full_and_half_levels(backend):
    i32 = np.int32
    nflatlev = 3
    a = cell_diagnostics_inputs()
    ekin_want, khalf_want = cell_diagnostics_numpy(a, nflatlev)
    hs, he, vs, ve = 1, NC - 1, 1, NH           # icon4py's vertical_end: nlev + 1

    # one domain for a full-level and a half-level output, as icon4py's program
    # writes them (levels vertical_start .. vertical_end - 1)
    ekin0, khalf0 = f64(NC, NLEV).astype(np.float32), f64(NC, NH).astype(np.float32)
    ekin, khalf = ekin0.copy(), khalf0.copy()
    _compute_horizontal_kinetic_energy_and_khalf_contravariant_correction(
        **a, nflatlev=nflatlev, out=(ekin, khalf),
        domain={dims.CellDim: (i32(hs), i32(he)), dims.KDim: (i32(vs), i32(ve - 1))},
        offset_provider=TABLES, backend=backend)
    check({"ekin": ekin, "khalf": khalf},
          {"ekin": inside(ekin_want, ekin0, hs, he, vs, ve - 1),
           "khalf": inside(khalf_want, khalf0, hs, he, vs, ve - 1)}, rtol=2e-6, atol=2e-6)

    # a tuple of domains from unpacked bindings: each output on its own levels
    ekin, khalf = ekin0.copy(), khalf0.copy()
    cells = {dims.CellDim: (0, NC)}
    full, halves = ({**cells, dims.KDim: (0, NLEV)}, {**cells, dims.KDim: (2, NLEV)})
    _compute_horizontal_kinetic_energy_and_khalf_contravariant_correction(
        **a, nflatlev=i32(nflatlev), out=(ekin, khalf), domain=(full, halves),
        offset_provider=TABLES, backend=backend)
    check({"ekin": ekin, "khalf": khalf},
          {"ekin": ekin_want, "khalf": inside(khalf_want, khalf0, 0, NC, 2, NLEV)},
          rtol=2e-6, atol=2e-6)

    # the corrected contravariant wind on every half level, from the half-level
    # correction just written (the surface level zero)
    w = RNG.standard_normal((NC, NH))
    corrected0 = f64(NC, NH).astype(np.float32)
    corrected = corrected0.copy()
    _compute_khalf_contravariant_corrected_w(
        w, khalf, a["k"], nflatlev, NLEV, out=corrected,
        domain={dims.CellDim: (hs, he), dims.KDim: (0, i32(NH))},
        offset_provider=TABLES, backend=backend)
    kk = np.arange(NH)
    want = np.where(kk < NLEV, w.astype(np.float32), 0.0).astype(np.float32)
    want = np.where((nflatlev + 1 <= kk) & (kk < NLEV), want - khalf, want)
    want = np.where(kk == NLEV, 0.0, want)
    check({"w": corrected}, {"w": inside(want, corrected0, hs, he)}, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_call_of_the_cfl_clipping_into_a_bool_and_half_levels(backend):
    # the clipping flags (bool) and the CFL number on full levels beside the
    # clipped wind on half levels, all on one domain
    i32 = np.int32
    f32 = np.float32
    ddqz = RNG.uniform(20.0, 200.0, (NC, NLEV)).astype(f32)
    wcon = (RNG.standard_normal((NC, NLEV)) * 60.0).astype(f32)
    cfl_w_limit, dtime = f32(0.65 / 2.0), 2.0
    clip0 = RNG.random((NC, NLEV)) > 0.5
    vcfl0 = f64(NC, NLEV).astype(f32)
    wout0 = f64(NC, NH).astype(f32)
    clip, vcfl, wout = clip0.copy(), vcfl0.copy(), wout0.copy()
    hs, he, vs, ve = 0, NC - 2, 2, NLEV - 1
    _compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
        ddqz, wcon, cfl_w_limit, dtime, out=(clip, vcfl, wout),
        domain={dims.CellDim: (hs, i32(he)), dims.KDim: (i32(vs), ve)},
        offset_provider={}, backend=backend)
    want_clip = np.abs(wcon) > cfl_w_limit * ddqz
    cfl = np.where(want_clip, wcon.astype(np.float64) * dtime / ddqz.astype(np.float64), 0.0)
    cfl32 = cfl.astype(f32)
    clipped = wcon.astype(np.float64)
    clipped = np.where(want_clip & (cfl32 < -f32(0.85)),
                       (-f32(0.85) * ddqz).astype(np.float64) / dtime, clipped)
    clipped = np.where(want_clip & (cfl32 > f32(0.85)),
                       (f32(0.85) * ddqz).astype(np.float64) / dtime, clipped)
    np.testing.assert_array_equal(clip, inside(want_clip, clip0, hs, he, vs, ve))
    wide = np.zeros((NC, NH), f32)
    wide[:, :NLEV] = clipped.astype(f32)
    check({"vcfl": vcfl, "w": wout},
          {"vcfl": inside(cfl32, vcfl0, hs, he, vs, ve),
           "w": inside(wide, wout0, hs, he, vs, ve)}, rtol=1e-6, atol=1e-6)

    # without domain=: the levels all three outputs have (GT4Py's intersection
    # of their domains), the surface half level left as it was
    clip, vcfl, wout = clip0.copy(), vcfl0.copy(), wout0.copy()
    _compute_maximum_cfl_and_clip_contravariant_vertical_velocity(
        ddqz, wcon, cfl_w_limit, dtime, out=(clip, vcfl, wout), offset_provider={},
        backend=backend)
    np.testing.assert_array_equal(clip, want_clip)
    wide[:, NLEV] = wout0[:, NLEV]
    check({"vcfl": vcfl, "w": wout}, {"vcfl": cfl32, "w": wide}, rtol=1e-6, atol=1e-6)


# ============================================================ turbulence half levels
#
# icon4py's turbulence (tmx) set-up on cell half levels: a full-level field
# interpolated to half levels with its top and bottom half levels extrapolated
# quadratically (``concat_where`` on ``KDim == 0`` and on a runtime
# ``KDim == nlev``, shifts spelled ``KDim + 1``), written into an out= one
# level longer than its input, and the constant eddy viscosity and
# diffusivity from the half-level density, its boundary half levels copied
# from their neighbours: one program on runtime bounds, and direct calls with
# and without ``domain=``.


@gtx.field_operator
def _interpolate_cell_field_to_half_levels_wp(
    wgtfac_c: fa.CellKField[wpfloat], interpolant: fa.CellKField[wpfloat],
) -> fa.CellKField[wpfloat]:
    interpolation_to_half_levels_wp = wgtfac_c * interpolant + (
        wpfloat("1.0") - wgtfac_c
    ) * interpolant(Koff[-1])
    return interpolation_to_half_levels_wp


@gtx.field_operator
def _interpolate_cell_to_half_levels(
    interpolant: fa.CellKField[wpfloat],
    wgtfac_c: fa.CellKField[wpfloat],
    wgtfacq1_c_1: fa.CellField[wpfloat],
    wgtfacq1_c_2: fa.CellField[wpfloat],
    wgtfacq1_c_3: fa.CellField[wpfloat],
    wgtfacq_c_1: fa.CellField[wpfloat],
    wgtfacq_c_2: fa.CellField[wpfloat],
    wgtfacq_c_3: fa.CellField[wpfloat],
    nlev: gtx.int32,
) -> fa.CellKField[wpfloat]:
    interpolation_interior = _interpolate_cell_field_to_half_levels_wp(
        wgtfac_c=wgtfac_c, interpolant=interpolant
    )
    interpolation_top = (
        wgtfacq1_c_1 * interpolant
        + wgtfacq1_c_2 * interpolant(KDim + 1)
        + wgtfacq1_c_3 * interpolant(KDim + 2)
    )
    interpolation_bottom = (
        wgtfacq_c_1 * interpolant(KDim - 1)
        + wgtfacq_c_2 * interpolant(KDim - 2)
        + wgtfacq_c_3 * interpolant(KDim - 3)
    )
    interpolation = concat_where(dims.KDim == 0, interpolation_top, interpolation_interior)
    return concat_where(dims.KDim == nlev, interpolation_bottom, interpolation)


@gtx.field_operator
def _assign_constant_viscosity(
    rho_ic: fa.CellKField[wpfloat],
    km_const: wpfloat,
    rturb_prandtl: wpfloat,
    nlev: gtx.int32,
) -> tuple[fa.CellKField[wpfloat], fa.CellKField[wpfloat]]:
    km = rho_ic * km_const
    km_ic = concat_where(dims.KDim == 0, km(KDim + 1), km)
    km_ic = concat_where(dims.KDim == nlev, km(KDim - 1), km_ic)
    kh_ic = km_ic * rturb_prandtl
    return km_ic, kh_ic


@gtx.program(grid_type=gtx.GridType.UNSTRUCTURED)
def turbulence_half_levels(
    rho: fa.CellKField[wpfloat],
    wgtfac_c: fa.CellKField[wpfloat],
    wgtfacq1_c_1: fa.CellField[wpfloat],
    wgtfacq1_c_2: fa.CellField[wpfloat],
    wgtfacq1_c_3: fa.CellField[wpfloat],
    wgtfacq_c_1: fa.CellField[wpfloat],
    wgtfacq_c_2: fa.CellField[wpfloat],
    wgtfacq_c_3: fa.CellField[wpfloat],
    rho_ic: fa.CellKField[wpfloat],
    km_ic: fa.CellKField[wpfloat],
    kh_ic: fa.CellKField[wpfloat],
    km_const: wpfloat,
    rturb_prandtl: wpfloat,
    nlev: gtx.int32,
    horizontal_start: gtx.int32,
    horizontal_end: gtx.int32,
    vertical_start: gtx.int32,
    vertical_end: gtx.int32,
) -> None:
    _interpolate_cell_to_half_levels(
        interpolant=rho, wgtfac_c=wgtfac_c, wgtfacq1_c_1=wgtfacq1_c_1,
        wgtfacq1_c_2=wgtfacq1_c_2, wgtfacq1_c_3=wgtfacq1_c_3, wgtfacq_c_1=wgtfacq_c_1,
        wgtfacq_c_2=wgtfacq_c_2, wgtfacq_c_3=wgtfacq_c_3, nlev=nlev, out=rho_ic,
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (0, nlev + 1)},
    )
    _assign_constant_viscosity(
        rho_ic=rho_ic, km_const=km_const, rturb_prandtl=rturb_prandtl, nlev=nlev,
        out=(km_ic, kh_ic),
        domain={dims.CellDim: (horizontal_start, horizontal_end),
                dims.KDim: (vertical_start, vertical_end)},
    )


def half_level_inputs():
    a = dict(rho=RNG.uniform(0.5, 1.2, (NC, NLEV)), wgtfac_c=RNG.uniform(0.3, 0.7, (NC, NH)))
    for name in ("wgtfacq1_c_1", "wgtfacq1_c_2", "wgtfacq1_c_3", "wgtfacq_c_1", "wgtfacq_c_2",
                 "wgtfacq_c_3"):
        a[name] = RNG.uniform(-0.5, 1.5, NC)
    return a


def rho_ic_numpy(a):
    rho, g = a["rho"], a["wgtfac_c"]
    out = np.empty((NC, NH))
    out[:, 1:NLEV] = g[:, 1:NLEV] * rho[:, 1:] + (1.0 - g[:, 1:NLEV]) * rho[:, :-1]
    out[:, 0] = sum(a[f"wgtfacq1_c_{j + 1}"] * rho[:, j] for j in range(3))
    out[:, NLEV] = sum(a[f"wgtfacq_c_{j + 1}"] * rho[:, NLEV - 1 - j] for j in range(3))
    return out


def viscosity_numpy(rho_ic, km_const, rturb_prandtl):
    km = rho_ic * km_const
    km[:, 0], km[:, NLEV] = km[:, 1], km[:, NLEV - 1]
    return km, km * rturb_prandtl


@pytest.mark.parametrize("bounds", [(0, NC, 0, NH), (1, NC - 2, 1, NLEV)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_turbulence_half_levels(backend, bounds):
    hs, he, vs, ve = bounds
    a = half_level_inputs()
    base = {n: f64(NC, NH) for n in ("rho_ic", "km_ic", "kh_ic")}
    got = {n: v.copy() for n, v in base.items()}
    km_const, rturb_prandtl = 75.0, 1.0 / 0.74
    turbulence_half_levels(**a, **got, km_const=km_const, rturb_prandtl=rturb_prandtl,
                           nlev=NLEV, horizontal_start=hs, horizontal_end=he,
                           vertical_start=vs, vertical_end=ve, offset_provider=TABLES,
                           backend=backend)
    rho_ic = inside(rho_ic_numpy(a), base["rho_ic"], hs, he)
    km, kh = viscosity_numpy(rho_ic, km_const, rturb_prandtl)
    check(got, {"rho_ic": rho_ic, "km_ic": inside(km, base["km_ic"], hs, he, vs, ve),
                "kh_ic": inside(kh, base["kh_ic"], hs, he, vs, ve)}, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_calls_onto_half_levels_from_full_levels(backend):
    i32 = np.int32
    a = half_level_inputs()
    want = rho_ic_numpy(a)
    a["interpolant"] = a.pop("rho")
    # the whole of out=, a level longer than the interpolant
    rho_ic = f64(NC, NH)
    _interpolate_cell_to_half_levels(**a, nlev=NLEV, out=rho_ic, offset_provider=TABLES,
                                     backend=backend)
    check({"rho_ic": rho_ic}, {"rho_ic": want}, rtol=1e-12, atol=1e-12)
    # the bottom half levels only, on a domain of NumPy integers
    part0 = f64(NC, NH)
    part = part0.copy()
    _interpolate_cell_to_half_levels(
        **a, nlev=i32(NLEV), out=part,
        domain={dims.CellDim: (i32(2), i32(NC)), dims.KDim: (i32(NLEV - 2), i32(NH))},
        offset_provider=TABLES, backend=backend)
    check({"part": part}, {"part": inside(want, part0, 2, NC, NLEV - 2, NH)}, rtol=1e-12,
          atol=1e-12)
    # the viscosity and diffusivity, each on its own levels
    km0, kh0 = f64(NC, NH), f64(NC, NH)
    km_ic, kh_ic = km0.copy(), kh0.copy()
    top, rest = {dims.KDim: (0, 1)}, {dims.KDim: (1, NH)}
    _assign_constant_viscosity(rho_ic, 50.0, 1.25, NLEV, out=(km_ic, kh_ic),
                               domain=(rest, top), offset_provider=TABLES, backend=backend)
    km, kh = viscosity_numpy(want, 50.0, 1.25)
    check({"km": km_ic, "kh": kh_ic}, {"km": inside(km, km0, 0, NC, 1, NH),
                                       "kh": inside(kh, kh0, 0, NC, 0, 1)},
          rtol=1e-12, atol=1e-12)
